// The codes the token suite exchanges: minted beforehand through each server's real flow (sign-in
// and consent), written as the exchange requests bench/loadgen sends, and one exchanged to check
// what an access token looks like.
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { Browserish } from '../test/harness/auth-flow.ts';
import type { TokenServerResult } from './token-report.ts';

export interface Minted {
  code: string;
  verifier: string;
}

export const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/**
 * Sign-ins in flight while codes are minted: the auth server gives one client address at most two
 * places at its password-hashing gate and answers the rest 503, and every sign-in here comes from
 * one address. Minting is set-up; the exchanges are what is measured.
 */
export const MINT_CONCURRENCY = 2;

/** Runs one(0..n-1), `concurrency` at a time; the results in index order. */
export async function pool<T>(
  n: number,
  concurrency: number,
  one: (i: number) => Promise<T>,
): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await one(i);
      }
    }),
  );
  return out;
}

/** Both servers sign in with OpenID Connect: each exchange issues an id_token beside the access and refresh tokens. */
export const SCOPE = 'openid profile offline_access';

/** oidc-provider's flow: /auth, its dev login and consent pages, back to /auth, the code redirect. */
export async function oidcProviderCode(
  issuer: string,
  clientId: string,
  redirectUri: string,
  b: Browserish,
): Promise<Minted> {
  const { verifier, challenge } = pkce();
  const q = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: SCOPE,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
  });
  let url = `${issuer}/auth?${q}`;
  for (let step = 0; step < 12; step++) {
    const res = await b.get(url);
    const body = await res.text();
    const location = res.headers.get('location');
    if (location === null) {
      const uid = /\/interaction\/([^/?#]+)/.exec(url)?.[1];
      if (res.status !== 200 || uid === undefined)
        throw new Error(`oidc-provider flow: ${res.status} at ${url}: ${body.slice(0, 200)}`);
      const prompt = /name="prompt" value="(\w+)"/.exec(body)?.[1] ?? 'consent';
      const posted = await b.post(
        `${issuer}/interaction/${uid}`,
        prompt === 'login' ? { prompt, login: 'alice', password: 'x' } : { prompt },
      );
      await posted.arrayBuffer();
      url = new URL(posted.headers.get('location') ?? '', issuer).toString();
      continue;
    }
    const next = new URL(location, url);
    if (next.toString().startsWith(redirectUri)) {
      const code = next.searchParams.get('code');
      if (code === null) throw new Error(`oidc-provider flow ended without a code: ${next}`);
      return { code, verifier };
    }
    url = next.toString();
  }
  throw new Error('oidc-provider flow: too many steps');
}

export function exchangeFile(
  dir: string,
  name: string,
  codes: Minted[],
  clientId: string,
  secret: string,
  redirectUri: string,
): string {
  const basic = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
  const lines = codes.map((m) =>
    JSON.stringify({
      method: 'POST',
      path: '/token',
      headers: {
        authorization: basic,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: m.code,
        redirect_uri: redirectUri,
        code_verifier: m.verifier,
      }).toString(),
    }),
  );
  const file = path.join(dir, `${name}.jsonl`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

export async function inspectToken(
  issuer: string,
  m: Minted,
  clientId: string,
  secret: string,
  redirectUri: string,
): Promise<TokenServerResult['accessToken']> {
  const res = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: m.code,
      redirect_uri: redirectUri,
      code_verifier: m.verifier,
    }),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200 || typeof json['access_token'] !== 'string')
    throw new Error(`${issuer}: exchange answered ${res.status} ${JSON.stringify(json)}`);
  const header = decodeProtectedHeader(json['access_token']);
  return {
    alg: String(header.alg),
    typ: String(header.typ),
    aud: decodeJwt(json['access_token']).aud,
    hasRefreshToken: typeof json['refresh_token'] === 'string',
    hasIdToken: typeof json['id_token'] === 'string',
  };
}
