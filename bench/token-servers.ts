// The servers the token suite measures, both with the same client (the test stack's `oidc-client`,
// its secret and redirect URI), and the codes it exchanges: minted beforehand through each
// server's real flow (sign-in and consent), written as the exchange requests bench/loadgen sends,
// and one exchanged to check what an access token looks like.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair } from 'jose';
import { hashPassword } from '../lib/config/auth-server.ts';
import { authorize, pkce, tokenRequest, type Browserish } from '../test/harness/auth-flow.ts';
import {
  AUDIENCE,
  AUTH_SERVER_AS_DEPLOYED,
  SECRETS,
  startStack,
} from '../test/harness/auth-stack.ts';
import { freePort } from '../test/harness/ports.ts';
import { startProgram } from '../test/harness/programs.ts';
import { pool } from './lib/suite.ts';

const CLIENT_ID = 'oidc-client';
const REDIRECT_URI = 'http://127.0.0.1:1/callback';

interface Minted {
  code: string;
  verifier: string;
}

/**
 * Sign-ins in flight while codes are minted: the auth server gives one client address at most two
 * places at its password-hashing gate and answers the rest 503, and every sign-in here comes from
 * one address. Minting is set-up; the exchanges are what is measured.
 */
const MINT_CONCURRENCY = 2;

/** `n` codes of a server, minted MINT_CONCURRENCY at a time in one browser session. */
export const mintCodes = (
  s: { mint: (b: Browserish) => Promise<Minted> },
  n: number,
  b: Browserish,
) => pool(n, MINT_CONCURRENCY, () => s.mint(b));

/** Both servers sign in with OpenID Connect: each exchange issues an id_token beside the access and refresh tokens. */
const SCOPE = 'openid profile offline_access';

/**
 * Portcullis' auth server as deployed, with a users file of a cheap scrypt (ln=10, the lowest the
 * server accepts) so minting is quick, and oidc-provider: each with how to mint a code.
 */
export async function startTokenServers(dir: string) {
  const usersFile = path.join(dir, 'users.json');
  const alice = {
    username: 'alice',
    password_hash: await hashPassword('wonderland', { ln: 10, r: 8, p: 1 }),
    profile: { name: 'Alice' },
  };
  writeFileSync(usersFile, JSON.stringify({ users: [alice] }));
  const nodeOptions = process.env['BENCH_AUTH_NODE_OPTIONS'];
  const stack = await startStack({
    authEnv: {
      ...(nodeOptions === undefined ? {} : { NODE_OPTIONS: nodeOptions }),
      AUTH_USERS_FILE: usersFile,
      AUTH_CODE_TTL_SECONDS: '600', // codes live long enough to mint a round
      LOG_LEVEL: 'warn',
      AUTH_SIGNIN_USER_BURST: '1000000',
      AUTH_SIGNIN_USER_ADDRESS_BURST: '1000000',
      AUTH_SIGNIN_ADDRESS_BURST: '1000000',
    },
  });
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), alg: 'ES256', use: 'sig', kid: 'bench-es256' };
  const opPort = await freePort();
  const opIssuer = `http://127.0.0.1:${opPort}`;
  const op = await startProgram({
    entry: 'bench/peers/oidc-provider-peer.ts',
    name: 'bench-oidc-provider',
    waitPort: opPort,
    env: {
      PORT: String(opPort),
      ISSUER: opIssuer,
      CLIENT_ID,
      CLIENT_SECRET: SECRETS.oidc,
      REDIRECT_URI,
      AUDIENCE,
      SIGNING_JWK: JSON.stringify(jwk),
      CODE_TTL_SECONDS: '600',
    },
  });
  const servers = [
    {
      name: 'portcullis',
      description: `Portcullis auth server as deployed (bundle, ${nodeOptions ?? AUTH_SERVER_AS_DEPLOYED.env.NODE_OPTIONS}; memory store)`,
      issuer: stack.issuer,
      pid: stack.programs[0]?.child.pid,
      mint: (b: Browserish) => portcullisCode(stack.issuer, b),
    },
    {
      name: 'oidc-provider',
      description: 'oidc-provider 9 (memory adapter)',
      issuer: opIssuer,
      pid: op.child.pid,
      mint: (b: Browserish) => oidcProviderCode(opIssuer, b),
    },
  ];
  return { servers, stop: () => Promise.all([op.stop(), stack.stop()]) };
}

/** Portcullis' flow through the test stack's sign-in and consent pages. */
async function portcullisCode(issuer: string, b: Browserish): Promise<Minted> {
  const { verifier, challenge } = pkce();
  const state = randomBytes(8).toString('hex');
  const redirectUri = REDIRECT_URI;
  const { location } = await authorize({
    issuer,
    clientId: CLIENT_ID,
    redirectUri,
    scope: SCOPE,
    challenge,
    state,
    b,
  });
  const code = location.searchParams.get('code');
  if (code === null) throw new Error(`portcullis flow ended without a code: ${location}`);
  return { code, verifier };
}

/** oidc-provider's flow: /auth, its dev login and consent pages, back to /auth, the code redirect. */
async function oidcProviderCode(issuer: string, b: Browserish): Promise<Minted> {
  const { verifier, challenge } = pkce();
  const q = new URLSearchParams({
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
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
    if (next.toString().startsWith(REDIRECT_URI)) {
      const code = next.searchParams.get('code');
      if (code === null) throw new Error(`oidc-provider flow ended without a code: ${next}`);
      return { code, verifier };
    }
    url = next.toString();
  }
  throw new Error('oidc-provider flow: too many steps');
}

/** The form of a code's exchange. */
const exchange = (m: Minted) => ({
  grant_type: 'authorization_code',
  code: m.code,
  redirect_uri: REDIRECT_URI,
  code_verifier: m.verifier,
});

/** The exchanges of `codes` as bench/loadgen's list file, POST /token with Basic client auth. */
export function exchangeFile(dir: string, name: string, codes: Minted[]): string {
  const headers = {
    authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${SECRETS.oidc}`).toString('base64')}`,
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  const lines = codes.map((m) =>
    JSON.stringify({
      method: 'POST',
      path: '/token',
      headers,
      body: new URLSearchParams(exchange(m)).toString(),
    }),
  );
  const file = path.join(dir, `${name}.jsonl`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** What the access token of one exchange looks like (checked, not assumed). */
export async function inspectToken(issuer: string, m: Minted) {
  const { status, json } = await tokenRequest(issuer, exchange(m), {
    basic: [CLIENT_ID, SECRETS.oidc],
  });
  const token = json['access_token'];
  if (status !== 200 || typeof token !== 'string')
    throw new Error(`${issuer}: exchange answered ${status} ${JSON.stringify(json)}`);
  const header = decodeProtectedHeader(token);
  return {
    alg: String(header.alg),
    typ: String(header.typ),
    aud: decodeJwt(token).aud as unknown,
    hasRefreshToken: typeof json['refresh_token'] === 'string',
    hasIdToken: typeof json['id_token'] === 'string',
  };
}
