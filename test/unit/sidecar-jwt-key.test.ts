// The jwt key source on its own: which tokens give a key, which are refused and why, and that a
// verified token is remembered (by hash, until its exp, in a bounded map) so a repeat does no
// signature check. Keys are local (jose's createLocalJWKSet), the clock is injected.
import { SignJWT, createLocalJWKSet, exportJWK, generateKeyPair, type JWTVerifyGetKey } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { jwtKeySchema } from '../../lib/config/sidecar.ts';
import { JwtKeySource, type JwtKeyResult } from '../../sidecar/jwt-key.ts';

const ISSUER = 'http://auth.test';
const AUDIENCE = 'urn:portcullis:user-service';
const settings = (overrides: Record<string, unknown> = {}) =>
  jwtKeySchema.parse({
    issuer: ISSUER,
    audience: AUDIENCE,
    jwksUrl: 'http://127.0.0.1:1/jwks.json',
    ...overrides,
  });

describe('jwt key source', () => {
  let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  let keys: JWTVerifyGetKey;
  /** Calls of the key lookup: one per signature check. */
  let lookups = 0;
  let now = Date.parse('2026-11-25T12:00:00Z');
  const clock = () => now;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256', { extractable: true });
    privateKey = pair.privateKey;
    const local = createLocalJWKSet({
      keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }],
    });
    keys = (header, token) => {
      lookups++;
      return local(header, token);
    };
  });

  const mint = (
    claims: Record<string, unknown> = {},
    header: Record<string, unknown> = {},
    expInS = 300,
  ) =>
    new SignJWT({ client_id: 'demo', ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt', ...header })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(typeof claims['sub'] === 'string' ? claims['sub'] : 'alice')
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(now / 1000) + expInS)
      .sign(privateKey);

  const resolve = async (
    source: JwtKeySource,
    authorization: string | undefined,
  ): Promise<JwtKeyResult> => source.resolve(authorization);

  it('a valid token gives its sub; the repeat is answered from memory, synchronously, without a signature check', async () => {
    const source = new JwtKeySource(settings(), { now: clock, keys });
    const token = await mint();
    lookups = 0;
    expect(await resolve(source, `Bearer ${token}`)).toEqual({ ok: true, key: 'alice' });
    expect(lookups).toBe(1);
    const again = source.resolve(`bearer  ${token}`);
    expect(again).toEqual({ ok: true, key: 'alice' }); // not a promise
    expect(lookups).toBe(1);
    expect(source.cached).toBe(1);
  });

  it('another claim can be the key', async () => {
    const source = new JwtKeySource(settings({ claim: 'client_id' }), { now: clock, keys });
    expect(await resolve(source, `Bearer ${await mint()}`)).toEqual({ ok: true, key: 'demo' });
  });

  it('a remembered token stops counting at its exp: then it is verified again, and refused as expired', async () => {
    const source = new JwtKeySource(settings(), { now: clock, keys });
    const token = await mint({}, {}, 60);
    expect(await resolve(source, `Bearer ${token}`)).toEqual({ ok: true, key: 'alice' });
    const start = now;
    try {
      now += 61_000;
      lookups = 0;
      expect(await resolve(source, `Bearer ${token}`)).toEqual({
        ok: false,
        reason: 'invalid',
        detail: 'The access token expired.',
      });
      expect(lookups).toBe(1);
      expect(source.cached).toBe(0);
    } finally {
      now = start;
    }
  });

  it('holds at most cacheSize tokens: the oldest is forgotten first', async () => {
    const source = new JwtKeySource(settings({ cacheSize: 2 }), { now: clock, keys });
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((sub) => mint({ sub })));
    for (const t of [a, b, c]) await resolve(source, `Bearer ${t as string}`);
    expect(source.cached).toBe(2);
    lookups = 0;
    expect(source.resolve(`Bearer ${c as string}`)).toEqual({ ok: true, key: 'c' });
    expect(source.resolve(`Bearer ${b as string}`)).toEqual({ ok: true, key: 'b' });
    expect(lookups).toBe(0);
    expect(await resolve(source, `Bearer ${a as string}`)).toEqual({ ok: true, key: 'a' });
    expect(lookups).toBe(1);
  });

  it('cacheSize 0 verifies every time', async () => {
    const source = new JwtKeySource(settings({ cacheSize: 0 }), { now: clock, keys });
    const token = await mint();
    lookups = 0;
    for (let i = 0; i < 3; i++)
      expect(await resolve(source, `Bearer ${token}`)).toEqual({ ok: true, key: 'alice' });
    expect(lookups).toBe(3);
    expect(source.cached).toBe(0);
  });

  it('no Authorization, or another scheme: missing (a bare challenge)', async () => {
    const source = new JwtKeySource(settings(), { now: clock, keys });
    expect(source.resolve(undefined)).toMatchObject({ ok: false, reason: 'missing' });
    expect(source.resolve('Basic YTpi')).toMatchObject({ ok: false, reason: 'missing' });
    expect(source.resolve('Bearer')).toMatchObject({
      ok: false,
      reason: 'invalid',
      detail: 'The bearer token is malformed.',
    });
    expect(source.resolve('Bearer a b')).toMatchObject({
      ok: false,
      reason: 'invalid',
      detail: 'The bearer token is malformed.',
    });
  });

  it.each([
    [
      'another issuer',
      { iss: 'http://evil.test' },
      {},
      'The access token is not valid here (iss).',
    ],
    ['another audience', { aud: 'urn:other' }, {}, 'The access token is not valid here (aud).'],
    ['an ID token type', {}, { typ: 'JWT' }, 'The access token is not valid here (typ).'],
    ['a sub that is not a string', { sub: 42 }, {}, 'The access token has no usable sub claim.'],
    [
      'a sub with a control character',
      { sub: 'a\u0001b' },
      {},
      'The access token has no usable sub claim.',
    ],
    [
      'a sub holding a lone surrogate (no UTF-8 form to forward)',
      { sub: 'a\ud800b' },
      {},
      'The access token has no usable sub claim.',
    ],
  ])('refuses a token with %s', async (_why, claims, header, detail) => {
    const source = new JwtKeySource(settings(), { now: clock, keys });
    let builder = new SignJWT({
      sub: 'alice',
      ...(claims as Record<string, unknown>),
    }).setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt', ...header });
    if (!('iss' in claims)) builder = builder.setIssuer(ISSUER);
    if (!('aud' in claims)) builder = builder.setAudience(AUDIENCE);
    const token = await builder
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(now / 1000) + 60)
      .sign(privateKey);
    expect(await resolve(source, `Bearer ${token}`)).toEqual({
      ok: false,
      reason: 'invalid',
      detail,
    });
    expect(source.cached).toBe(0);
  });

  it('refuses a token signed by another key, one with an algorithm not pinned, and one altered after signing', async () => {
    const source = new JwtKeySource(settings({ algorithms: ['ES256'] }), { now: clock, keys });
    const foreign = await new SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime(Math.floor(now / 1000) + 60)
      .sign((await generateKeyPair('ES256')).privateKey);
    expect(await resolve(source, `Bearer ${foreign}`)).toEqual({
      ok: false,
      reason: 'invalid',
      detail: 'The access token is invalid.',
    });
    const hs = await new SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1', typ: 'at+jwt' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime(Math.floor(now / 1000) + 60)
      .sign(new TextEncoder().encode('a shared secret of at least 32 bytes!!'));
    expect(await resolve(source, `Bearer ${hs}`)).toEqual({
      ok: false,
      reason: 'invalid',
      detail: 'The access token is invalid.',
    });
    const [h, , sig] = (await mint()).split('.');
    const payload = Buffer.from(
      JSON.stringify({
        sub: 'mallory',
        iss: ISSUER,
        aud: AUDIENCE,
        exp: Math.floor(now / 1000) + 60,
      }),
    ).toString('base64url');
    expect(await resolve(source, `Bearer ${h as string}.${payload}.${sig as string}`)).toEqual({
      ok: false,
      reason: 'invalid',
      detail: 'The access token is invalid.',
    });
  });

  it('an unreachable key set is unavailable (503), not a refusal of the token', async () => {
    const source = new JwtKeySource(settings({ jwksTimeoutMs: 200 }), { now: clock });
    expect(await resolve(source, `Bearer ${await mint()}`)).toMatchObject({
      ok: false,
      reason: 'unavailable',
    });
  });
});
