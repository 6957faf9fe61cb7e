// The jwt key source against a JWKS served over HTTP, as an issuer rotating its keys serves it:
// a token signed with a key the sidecar has not seen makes it fetch the key set again, but never
// more often than the cooldown allows, so a flood of tokens naming made-up key ids cannot turn
// the sidecar into a load generator against the issuer.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type JWK, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jwtKeySchema } from '../../lib/config/sidecar.ts';
import { JwtKeySource, type JwtKeyResult } from '../../sidecar/jwt-key.ts';

const ISSUER = 'http://auth.test';
const AUDIENCE = 'urn:portcullis:user-service';
/** ms; long enough that the requests right after a fetch fall inside it on a busy machine. */
const COOLDOWN_MS = 4000;

interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
}

async function signingKey(kid: string): Promise<SigningKey> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  return {
    kid,
    privateKey: pair.privateKey,
    jwk: { ...(await exportJWK(pair.publicKey)), kid, alg: 'ES256', use: 'sig' },
  };
}

const mint = (key: SigningKey, sub: string) =>
  new SignJWT({ client_id: 'demo' })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(key.privateKey);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('jwt key source: JWKS refresh on an unknown key id', () => {
  let server: Server;
  let published: JWK[] = [];
  let fetches = 0;
  let source: JwtKeySource;
  let first: SigningKey;
  let rotated: SigningKey;
  let unknown: SigningKey;

  beforeAll(async () => {
    [first, rotated, unknown] = await Promise.all([
      signingKey('k1'),
      signingKey('k2'),
      signingKey('k3'),
    ]);
    published = [first.jwk];
    server = createServer((req, res) => {
      if (req.url !== '/jwks.json') return void res.writeHead(404).end();
      fetches++;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    source = new JwtKeySource(
      jwtKeySchema.parse({
        issuer: ISSUER,
        audience: AUDIENCE,
        jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
        jwksCooldownMs: COOLDOWN_MS,
      }),
    );
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  const resolve = async (token: string): Promise<JwtKeyResult> => source.resolve(`Bearer ${token}`);

  it('fetches the key set once for the first token and not again for tokens of a known key', async () => {
    expect(await resolve(await mint(first, 'alice'))).toEqual({ ok: true, key: 'alice' });
    expect(await resolve(await mint(first, 'bob'))).toEqual({ ok: true, key: 'bob' });
    expect(fetches).toBe(1);
  });

  it('a key published after the last fetch is found by fetching again once the cooldown is over, not before', async () => {
    published = [first.jwk, rotated.jwk];
    const early = await resolve(await mint(rotated, 'carol'));
    expect(early).toMatchObject({ ok: false, reason: 'invalid' });
    expect(fetches).toBe(1);

    await sleep(COOLDOWN_MS + 200);
    expect(await resolve(await mint(rotated, 'carol'))).toEqual({ ok: true, key: 'carol' });
    expect(fetches).toBe(2);
  });

  it('a flood of tokens naming a key id nobody publishes costs at most one fetch per cooldown', async () => {
    const forged = await Promise.all(
      Array.from({ length: 50 }, (_, i) => mint(unknown, `mallory-${i}`)),
    );
    const results = await Promise.all(forged.map(resolve));
    for (const r of results) expect(r).toMatchObject({ ok: false, reason: 'invalid' });
    // The refetch right after the previous test's fetch is inside the cooldown: none at all.
    expect(fetches).toBe(2);
    // Tokens of the known keys are still verified from the cached set meanwhile.
    expect(await resolve(await mint(first, 'dave'))).toEqual({ ok: true, key: 'dave' });
    expect(fetches).toBe(2);
  });
});
