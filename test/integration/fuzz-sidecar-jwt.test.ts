// Hostile Authorization headers against a sidecar keyed on verified access tokens: random
// strings, every scheme spelling, valid tokens truncated, with a byte changed, re-signed by
// another key, or with their parts swapped between two users. Exactly the untouched valid tokens
// pass (with their own subject forwarded); everything else is 401 problem+json with a Bearer
// challenge; never a 5xx, never a request reaching the service unverified.
import fc from 'fast-check';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { starter } from '../harness/fixtures.ts';
import type { RunningSidecar } from '../harness/programs.ts';
import { recordCases } from '../harness/reliability-counts.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 250);
const ISSUER = 'http://issuer.test';
const AUDIENCE = 'urn:fuzz';

describe('hostile Authorization headers against the jwt key', () => {
  const start = starter();
  let sidecar: RunningSidecar;
  const seen: (string | undefined)[] = [];
  const valid: Record<string, string> = {};
  let foreign: string;

  const mint = async (sub: string, key: Parameters<SignJWT['sign']>[0]) =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'k', typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(sub)
      .setExpirationTime('10m')
      .sign(key);

  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwks = JSON.stringify({
      keys: [{ ...(await exportJWK(publicKey)), kid: 'k', alg: 'ES256', use: 'sig' }],
    });
    const keyServer = await start.upstream((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(jwks),
    );
    const upstream = await start.upstream((req, res) => {
      seen.push(req.headers['user-id'] as string | undefined);
      res.end('ok');
    });
    sidecar = await start.sidecar(
      {
        upstream: { url: upstream.url },
        route: { id: 'fuzzjwt' },
        limiter: {
          replenishRate: 100_000,
          burstCapacity: 1_000_000,
          key: 'jwt',
          jwt: {
            issuer: ISSUER,
            audience: AUDIENCE,
            jwksUrl: `${keyServer.url}/jwks.json`,
            cacheSize: 64,
          },
        },
        logLevel: 'warn',
      },
      { name: 'sidecar-fuzz-jwt' },
    );
    valid['ann'] = await mint('ann', privateKey);
    valid['ben'] = await mint('ben', privateKey);
    foreign = await mint('ann', (await generateKeyPair('ES256')).privateKey);
  });
  afterAll(() => start.stopAll());

  const send = async (authorization: string) => {
    const before = seen.length;
    const res = await request(`${sidecar.url}/x`, {
      headers: { authorization, 'user-id': 'mallory' },
    });
    const body = await res.body.text();
    return {
      status: res.statusCode,
      challenge: res.headers['www-authenticate'],
      type: res.headers['content-type'],
      body,
      forwarded: seen.slice(before),
    };
  };

  /** A variant of a valid token: truncated, one character changed, parts swapped, or another key's. */
  const mutation = fc.oneof(
    fc
      .tuple(fc.constantFrom('ann', 'ben'), fc.nat())
      .map(([u, n]) => (valid[u] as string).slice(0, n % (valid[u] as string).length)),
    fc
      .tuple(fc.constantFrom('ann', 'ben'), fc.nat(), fc.constantFrom('A', 'b', '-', '_', '0'))
      .map(([u, n, c]) => {
        const t = valid[u] as string;
        // Not the last character: its low bits are padding, so some changes there decode to the same signature.
        const i = n % (t.length - 1);
        return t[i] === c
          ? `${t.slice(0, i)}Z${t.slice(i + 1)}`
          : `${t.slice(0, i)}${c}${t.slice(i + 1)}`;
      }),
    fc.constant('swap').map(() => {
      const [h, , s] = (valid['ann'] as string).split('.');
      return `${h as string}.${(valid['ben'] as string).split('.')[1] as string}.${s as string}`;
    }),
    fc.constant('foreign').map(() => foreign),
  );

  it('only an untouched valid token passes, with its own subject forwarded; every variant is 401, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        mutation,
        fc.constantFrom('Bearer ', 'bearer ', 'BEARER  '),
        async (token, scheme) => {
          recordCases('sidecar jwt fuzz cases', 1);
          const isValid = Object.values(valid).includes(token);
          const res = await send(`${scheme}${token}`);
          if (isValid) {
            expect(res.status).toBe(200);
            expect(res.forwarded).toEqual([token === valid['ann'] ? 'ann' : 'ben']);
            return;
          }
          expect(res.status).toBe(401);
          expect(res.type).toBe('application/problem+json');
          expect(res.challenge).toMatch(
            /^Bearer( error="invalid_token", error_description="[^"]+")?$/,
          );
          expect(res.forwarded).toEqual([]);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('any Authorization value at all: 200 only for a valid token, otherwise 401, never 5xx or a forwarded request', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 300 }).filter((v) => /^[\t\x20-\x7e]*$/.test(v)),
          fc.stringMatching(/^(Bearer|Basic|Token|bearer)( {0,3}[A-Za-z0-9._~+/=-]{0,80}){0,3}$/),
        ),
        async (value) => {
          recordCases('sidecar jwt fuzz cases', 1);
          const res = await send(value);
          expect(res.status).toBe(401);
          expect(res.challenge).toMatch(/^Bearer/);
          expect(res.forwarded).toEqual([]);
        },
      ),
      { numRuns: RUNS },
    );
    // A valid token still passes afterwards.
    expect((await send(`Bearer ${valid['ann'] as string}`)).status).toBe(200);
  });
});
