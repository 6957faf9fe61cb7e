// One identity end to end: the service behind the sidecar reads exactly the identity that was
// charged, once, whether it is a Node service (node:http joins repeated lines) or a WSGI/CGI one
// (Python's wsgiref, where USER_ID and USER-ID are both HTTP_USER_ID). Real sidecars, real Redis,
// a real JWKS over HTTP for the jwt key.
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { describe, expect, it } from 'vitest';
import type { SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { perDescribe } from '../harness/fixtures.ts';
import { startWsgiUpstream } from '../harness/wsgi-upstream.ts';
import { rawRequest } from './sidecar-support.ts';

const ISSUER = 'http://issuer.test';
const AUDIENCE = 'urn:portcullis:identity-test';
const BURST = 100;

describe('one identity from the client to the service', () => {
  const stack = perDescribe(async (start) => {
    const redis = await start.redis();
    const pair = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const jwks = await start.upstream((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ keys: [jwk] })),
    );
    /** What the Node service read as user-id, one entry per request: every line's value. */
    const nodeSeen: string[][] = [];
    const node = await start.upstream((req, res) => {
      nodeSeen.push(req.headersDistinct['user-id'] ?? []);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
    const wsgi = await startWsgiUpstream();
    start.defer(() => wsgi.program.stop());
    const base = (
      id: string,
      url: string,
      limiter: Partial<SidecarConfigInput['limiter']> = {},
    ) => ({
      upstream: { url },
      route: { id },
      limiter: {
        replenishRate: 1,
        burstCapacity: BURST,
        onStoreError: 'deny' as const,
        ...limiter,
      },
      redis: { url: redis.url, commandTimeoutMs: 5000 },
    });
    const jwt = {
      key: 'jwt' as const,
      jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUrl: `${jwks.url}/jwks.json` },
    };
    return {
      nodeSeen,
      headerToNode: await start.sidecar(base('hdr-node', node.url), {
        name: 'sidecar-identity-hdr-node',
      }),
      headerToWsgi: await start.sidecar(base('hdr-wsgi', wsgi.url), {
        name: 'sidecar-identity-hdr-wsgi',
      }),
      jwtToWsgi: await start.sidecar(base('jwt-wsgi', wsgi.url, jwt), {
        name: 'sidecar-identity-jwt-wsgi',
      }),
      token: (sub: string) =>
        new SignJWT({ client_id: 'demo' })
          .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setSubject(sub)
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(pair.privateKey as CryptoKey),
    };
  });

  const get = (port: number, headerLines: string[], path = '/api/data') =>
    rawRequest(
      port,
      `GET ${path} HTTP/1.1\r\nHost: svc.test\r\n${headerLines.map((l) => `${l}\r\n`).join('')}\r\n`,
    );
  /** HTTP_USER_ID as the WSGI service read it. */
  const wsgiUserId = (body: string): unknown => (JSON.parse(body) as { userId: unknown }).userId;
  /** Tokens left in the bucket after this response (RateLimit-Remaining). */
  const remaining = (res: { headers: Map<string, string> }) =>
    Number(res.headers.get('ratelimit-remaining'));

  it('two USER-ID lines: the first is charged and is the only identity a Node service reads', async () => {
    const { headerToNode, nodeSeen } = stack;
    const res = await get(headerToNode.port, ['USER-ID: alice', 'USER-ID: bob']);
    expect(res.status).toBe(200);
    expect(nodeSeen.at(-1)).toEqual(['alice']);
    // alice was charged, bob was not.
    expect(remaining(res)).toBe(BURST - 1);
    expect(remaining(await get(headerToNode.port, ['USER-ID: bob']))).toBe(BURST - 1);
  });

  it('header key: a line CGI reads as the key header (USER_ID, any case) never reaches a WSGI service', async () => {
    const { headerToWsgi } = stack;
    for (const lines of [
      ['USER-ID: carol', 'USER_ID: mallory'],
      ['user_id: mallory', 'USER-ID: carol'],
      ['User_Id: mallory', 'user-id: carol', 'USER-ID: mallory'],
    ]) {
      const res = await get(headerToWsgi.port, lines);
      expect(res.status).toBe(200);
      expect(wsgiUserId(res.body)).toBe('carol');
    }
    // USER_ID alone is not the key header: no key, refused, nothing forwarded.
    const bare = await get(headerToWsgi.port, ['USER_ID: mallory']);
    expect(bare.status).toBe(400);
    expect(bare.headers.get('content-type')).toBe('application/problem+json');
  });

  it('jwt key: the verified subject is the one identity a WSGI service reads, whatever USER_ID the client adds', async () => {
    const { jwtToWsgi, token } = stack;
    const res = await get(jwtToWsgi.port, [
      'USER_ID: mallory',
      `Authorization: Bearer ${await token('alice')}`,
      'USER-ID: mallory',
    ]);
    expect(res.status).toBe(200);
    expect(wsgiUserId(res.body)).toBe('alice');
  });

  it('jwt key: a subject beyond Latin-1 is forwarded percent-encoded (UTF-8), and every charge is a forwarded request', async () => {
    const { jwtToWsgi, token } = stack;
    const bearer = `Authorization: Bearer ${await token('zoë 漢字%')}`;
    for (let i = 1; i <= 3; i++) {
      const res = await get(jwtToWsgi.port, [bearer]);
      expect(res.status).toBe(200);
      expect(wsgiUserId(res.body)).toBe('zo%C3%AB%20%E6%BC%A2%E5%AD%97%25');
      expect(remaining(res)).toBe(BURST - i);
    }
  });
});
