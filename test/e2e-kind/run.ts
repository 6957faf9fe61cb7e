// The kind e2e's client side (scripts/kind.sh e2e runs it against port-forwards):
//  1. the specification's scenario (section 8.3): 30 GETs of the readiness path through the
//     gateway with one USER-ID, one every 0.5 s, limits 1/10/2. The expectation is the exact
//     token-bucket model (sidecar/bucket.ts) at the actual send times (12 on this schedule).
//  2. the OAuth 2.0 code flow as a browser would run it (sign-in form, consent form, redirect
//     with code), then the code exchanged at the token endpoint (PKCE S256, client_secret_basic).
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { take, type BucketRule, type BucketState } from '../../sidecar/bucket.ts';

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

/** The specification's 30-request scenario; throws when the count is off the exact model. */
export async function runScenario(gateway: string): Promise<{ ok: number; expected: number }> {
  const rule: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 };
  let state: BucketState | undefined;
  let expected = 0;
  let ok = 0;
  const start = performance.now();
  for (let i = 0; i < 30; i++) {
    await sleep(Math.max(0, start + i * 500 - performance.now()));
    const sentAt = performance.now();
    const model = take(state, rule, sentAt);
    state = model.state;
    if (model.decision.allowed) expected++;
    const res = await fetch(`${gateway}/healthcheck/ready`, { headers: { 'USER-ID': 'e2e-user', 'Content-Type': 'application/json' } });
    const body = await res.text();
    if (res.status === 200 && body === 'OK') ok++;
    else if (res.status !== 429) throw new Error(`request ${i + 1}: unexpected ${res.status} ${body}`);
  }
  // Sent on a fixed 0.5 s schedule the exact bucket admits 12 (DESIGN.md section 3: the
  // specification's "15" is what a sequential client with ~0.2 s round trips sees).
  console.log(`scenario: ${ok}/30 succeeded; the exact token-bucket model at the send times says ${expected}`);
  // One request of slack: the sidecar sees each request a little after it was sent.
  if (Math.abs(ok - expected) > 1) throw new Error(`scenario: ${ok} succeeded, the model says ${expected}`);
  return { ok, expected };
}

async function browse(cookies: Map<string, string>, url: string, init: RequestInit = {}): Promise<Response> {
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

export interface OAuthFlowOptions {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly redirectUri: string;
  readonly username: string;
  readonly password: string;
}

/** Sign-in and consent forms as a browser submits them, then the code exchange; returns the access token. */
export async function runOAuthFlow(o: OAuthFlowOptions): Promise<string> {
  const { issuer, redirectUri } = o;
  const cookies = new Map<string, string>();
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const auth = new URL('/auth', issuer);
  auth.search = new URLSearchParams({
    client_id: o.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'profile',
    state: 'e2e-state',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  let url = auth.toString();
  let res = await browse(cookies, url);
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
      res = await browse(cookies, url);
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
      if (name === 'username') body.set(name, o.username);
      else if (name === 'password') body.set(name, o.password);
      else body.set(name, attr(input, 'value') ?? '');
    }
    if (/name="decision"/.test(form[1] ?? '')) body.set('decision', 'allow');
    url = action;
    res = await browse(cookies, action, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }
  if (!code) throw new Error('the flow did not reach the redirect URI');
  const basic = Buffer.from(`${encodeURIComponent(o.clientId)}:${encodeURIComponent(o.clientSecret)}`).toString('base64');
  const token = await fetch(new URL('/token', issuer), {
    method: 'POST',
    headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier }),
  });
  const json = (await token.json()) as { access_token?: unknown };
  if (token.status !== 200 || typeof json.access_token !== 'string') throw new Error(`token endpoint: ${token.status} ${JSON.stringify(json)}`);
  console.log('oauth: code exchanged for an access token');
  return json.access_token;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await runScenario(env('GATEWAY_URL'));
  await runOAuthFlow({
    issuer: env('ISSUER_URL'),
    clientId: env('CLIENT_ID'),
    clientSecret: env('CLIENT_SECRET'),
    redirectUri: env('REDIRECT_URI'),
    username: env('USERNAME'),
    password: env('PASSWORD'),
  });
}
