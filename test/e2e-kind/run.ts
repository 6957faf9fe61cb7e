// The kind e2e's client side (scripts/kind.sh e2e runs it against port-forwards):
//  1. the specification's scenario (section 8.3): 30 GETs of the readiness path through the
//     gateway with one USER-ID, one every 0.5 s, limits 1/10/2 -> 15 succeed with body OK. The
//     expectation is computed from the actual send times with the exact token-bucket model.
//  2. the OAuth 2.0 code flow as a browser would run it (sign-in form, consent form, redirect
//     with code), then the code exchanged at the token endpoint (PKCE S256, client_secret_basic).
import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

async function scenario(gateway: string): Promise<void> {
  const rate = 1; // tokens/s
  const burst = 10;
  const cost = 2;
  let tokens = burst;
  let last: number | undefined;
  let expected = 0;
  let ok = 0;
  const start = performance.now();
  for (let i = 0; i < 30; i++) {
    await sleep(Math.max(0, start + i * 500 - performance.now()));
    const sentAt = performance.now();
    if (last !== undefined) tokens = Math.min(burst, tokens + ((sentAt - last) / 1000) * rate);
    last = sentAt;
    if (tokens >= cost) {
      tokens -= cost;
      expected++;
    }
    const res = await fetch(`${gateway}/healthcheck/ready`, { headers: { 'USER-ID': 'e2e-user', 'Content-Type': 'application/json' } });
    const body = await res.text();
    if (res.status === 200 && body === 'OK') ok++;
    else if (res.status !== 429) throw new Error(`request ${i + 1}: unexpected ${res.status} ${body}`);
  }
  console.log(`scenario: ${ok}/30 succeeded (model from send times: ${expected}; specification: 15)`);
  // One token of slack per side: the pod's clock sees each request a few ms after we send it.
  if (Math.abs(ok - expected) > 1) throw new Error(`scenario: ${ok} succeeded, the model says ${expected}`);
}

const cookies = new Map<string, string>();
async function browse(url: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (cookies.size > 0) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
  const res = await fetch(url, { ...init, headers, redirect: 'manual' });
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';');
    const eq = pair?.indexOf('=') ?? -1;
    if (pair && eq > 0) cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
  }
  return res;
}

function attr(tag: string, name: string): string | undefined {
  const m = new RegExp(`${name}="([^"]*)"`).exec(tag);
  return m?.[1]?.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');
}

async function oauthFlow(): Promise<void> {
  const issuer = env('ISSUER_URL');
  const redirectUri = env('REDIRECT_URI');
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const auth = new URL('/auth', issuer);
  auth.search = new URLSearchParams({
    client_id: env('CLIENT_ID'),
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'profile',
    state: 'e2e-state',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  let url = auth.toString();
  let res = await browse(url);
  let code: string | undefined;
  for (let step = 0; step < 10 && code === undefined; step++) {
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location') ?? '', url).toString();
      if (next.startsWith(redirectUri)) {
        const params = new URL(next).searchParams;
        if (params.get('state') !== 'e2e-state') throw new Error('state not echoed');
        code = params.get('code') ?? undefined;
        if (!code) throw new Error(`redirect without code: ${next}`);
        break;
      }
      url = next;
      res = await browse(url);
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${html.slice(0, 300)}`);
    const form = /<form[^>]*>([\s\S]*?)<\/form>/.exec(html);
    if (!form) throw new Error(`${url}: no form on the page`);
    const action = new URL(attr(form[0], 'action') ?? url, url).toString();
    const body = new URLSearchParams();
    for (const input of form[1]?.match(/<input[^>]*>/g) ?? []) {
      const name = attr(input, 'name');
      if (!name) continue;
      if (name === 'username') body.set(name, env('USERNAME'));
      else if (name === 'password') body.set(name, env('PASSWORD'));
      else body.set(name, attr(input, 'value') ?? '');
    }
    if (/name="decision"/.test(form[1] ?? '')) body.set('decision', 'allow');
    url = action;
    res = await browse(action, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }
  if (!code) throw new Error('the flow did not reach the redirect URI');
  const basic = Buffer.from(`${encodeURIComponent(env('CLIENT_ID'))}:${encodeURIComponent(env('CLIENT_SECRET'))}`).toString('base64');
  const token = await fetch(new URL('/token', issuer), {
    method: 'POST',
    headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier }),
  });
  const json = (await token.json()) as { access_token?: unknown };
  if (token.status !== 200 || typeof json.access_token !== 'string') throw new Error(`token endpoint: ${token.status} ${JSON.stringify(json)}`);
  console.log('oauth: code exchanged for an access token');
}

await scenario(env('GATEWAY_URL'));
await oauthFlow();
