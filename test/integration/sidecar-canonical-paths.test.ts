// One request, one rule: the path the sidecar matches is the path the upstream routes. A real
// sidecar (real Redis) in front of four upstreams that read paths their own way: the user service
// (fastify), a router on WHATWG `URL` pathnames, fastify with caseSensitive: false, and Python's
// wsgiref (PATH_INFO percent-decoded, %2F included). Each has a strict handler and the route a
// strict rule for it and a loose rule for the rest. Every variant of a strict target (dot-segments,
// escapes, `#`, `//`, backslash, case, HEAD) is sent as raw bytes; whenever the upstream's strict
// handler ran, the client must have been charged to the strict rule (its RateLimit-Policy), and
// whatever the sidecar refuses is a 400 problem+json that reached no upstream. An upgrade gets the
// same canonical target.
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { perDescribe } from '../harness/fixtures.ts';
import { startWsgiUpstream } from '../harness/wsgi-upstream.ts';
import { rawRequest, type RawResponse } from './sidecar-support.ts';

type Limiter = SidecarConfigInput['limiter'];
// Slow refill and a deep bucket: nothing is refused for the limit while a test runs.
const limits = [{ replenishRate: 1, burstCapacity: 10_000 }];

/** Strict rule for /api/admin/** (GET and POST), loose for the rest of /api. */
const apiLimiter: Limiter = {
  rules: [
    { name: 'strict', path: '/api/admin/**', methods: ['GET', 'POST'], limits },
    { name: 'loose', path: '/api/**', limits },
  ],
};
/** The user service's /me as the strict handler; the readiness probe loose. */
const meLimiter: Limiter = {
  rules: [
    { name: 'strict', path: '/me', methods: ['GET'], limits },
    { name: 'loose', path: '/healthcheck/**', limits },
  ],
};

type Variant = readonly [method: string, target: string];

const apiVariants: Variant[] = [
  ['GET', '/api/admin/users/1'],
  ['POST', '/api/admin/users/1'],
  ['HEAD', '/api/admin/users/1'],
  ['GET', '/api/admin/./users/1'],
  ['GET', '/api/x/../admin/users/1'],
  ['GET', '/api/admin/%2e/users/1'],
  ['GET', '/api/x/%2E%2E/admin/users/1'],
  ['GET', '/api/%61dmin/users/1'],
  ['GET', '/api/ad%6Din/users/1'],
  ['GET', '/api%2Fadmin/users/1'],
  ['GET', '/api%2fadmin%2fusers'],
  ['GET', '/api/x%2F..%2Fadmin/users/1'],
  ['GET', '//api/admin/users/1'],
  ['GET', '/api//admin/users/1'],
  ['GET', '/api/\\admin/users/1'],
  ['GET', '/api\\admin\\users'],
  ['GET', '/API/admin/users/1'],
  ['GET', '/api/ADMIN/users/1'],
  ['GET', '/api/Admin/users/1'],
  ['GET', '/api/admin/users/1#x'],
  ['GET', '/api/loose#/../admin/users/1'],
  ['GET', '/api/admin/users/1?next=/../loose'],
];

const meVariants: Variant[] = [
  ['GET', '/me'],
  ['HEAD', '/me'],
  ['GET', '/me#/..'],
  ['GET', '/me#x'],
  ['GET', '/x/../me'],
  ['GET', '/./me'],
  ['GET', '/%6De'],
  ['GET', '/%6d%65'],
  ['GET', '//me'],
  ['GET', '/me/.'],
  ['GET', '/healthcheck/../me'],
  ['GET', '/healthcheck/%2e%2e/me'],
  ['GET', '/ME'],
];

interface Kind {
  readonly name: string;
  readonly variants: Variant[];
  /** Whether this response came from the upstream's strict handler. */
  readonly strictRan: (res: RawResponse) => boolean;
  readonly caseInsensitivePaths?: boolean;
  readonly start: (start: Parameters<Parameters<typeof perDescribe>[0]>[0]) => Promise<string>;
  readonly limiter: Limiter;
}

const byHeader = (res: RawResponse) => res.headers.get('x-handler') === 'strict';

const kinds: Kind[] = [
  {
    name: 'user service (fastify)',
    variants: meVariants,
    // /me without a token: its own 401 with a Bearer challenge (the sidecar adds none in header mode).
    strictRan: (res) =>
      res.status === 401 && (res.headers.get('www-authenticate') ?? '').startsWith('Bearer'),
    start: async (start) => (await start.userService()).url,
    limiter: meLimiter,
  },
  {
    name: 'WHATWG URL router (node:http)',
    variants: apiVariants,
    strictRan: byHeader,
    async start(start) {
      const upstream = await start.upstream((req, res) => {
        const path = new URL(req.url ?? '/', 'http://upstream.test').pathname;
        const strict = path === '/api/admin' || path.startsWith('/api/admin/');
        res
          .writeHead(200, {
            'content-type': 'application/json',
            'x-handler': strict ? 'strict' : 'loose',
          })
          .end(JSON.stringify({ path }));
      });
      return upstream.url;
    },
    limiter: apiLimiter,
  },
  {
    name: 'fastify, caseSensitive: false',
    variants: apiVariants,
    strictRan: byHeader,
    caseInsensitivePaths: true,
    async start(start) {
      const app = Fastify({ routerOptions: { caseSensitive: false } });
      const handler =
        (name: string) =>
        async (_req: unknown, reply: { header: (n: string, v: string) => unknown }) => {
          reply.header('x-handler', name);
          return { handler: name };
        };
      app.route({ method: ['GET', 'POST'], url: '/api/admin', handler: handler('strict') });
      app.route({ method: ['GET', 'POST'], url: '/api/admin/*', handler: handler('strict') });
      app.route({ method: ['GET', 'POST'], url: '/*', handler: handler('loose') });
      await app.listen({ port: 0, host: '127.0.0.1' });
      start.defer(() => app.close());
      return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    },
    limiter: apiLimiter,
  },
  {
    name: "Python's wsgiref",
    variants: apiVariants,
    strictRan: byHeader,
    async start(start) {
      const wsgi = await startWsgiUpstream();
      start.defer(() => wsgi.program.stop());
      return wsgi.url;
    },
    limiter: apiLimiter,
  },
];

/** The rule names a response was charged to, from its RateLimit-Policy (`"<route>/<rule>"`). */
/** The rules charged, by RateLimit-Policy (`"rule<n>"`, numbered from 1: strict first, loose second in every route here). */
const ruleNames = ['strict', 'loose'];
const chargedRules = (res: RawResponse): string[] =>
  [...(res.headers.get('ratelimit-policy') ?? '').matchAll(/"rule(\d+)"/g)].map(
    (m) => ruleNames[Number(m[1]) - 1] ?? `rule${m[1]}`,
  );

describe.each(kinds)('$name behind the sidecar', (kind) => {
  const stack = perDescribe(async (start) => {
    const redis = await start.redis();
    const upstreamUrl = await kind.start(start);
    const sidecar = await start.sidecar(
      {
        upstream: { url: upstreamUrl },
        route: {
          id: 'paths',
          ...(kind.caseInsensitivePaths === true ? { caseInsensitivePaths: true } : {}),
        },
        // A slow store must not pass a request uncharged (the default fails open after 50 ms).
        limiter: { ...kind.limiter, onStoreError: 'deny' },
        redis: { url: redis.url, commandTimeoutMs: 5000 },
      },
      { name: `sidecar-paths-${kind.name.replace(/[^a-z]+/gi, '-')}` },
    );
    return { sidecar };
  });

  const send = ([method, target]: Variant) =>
    rawRequest(
      stack.sidecar.port,
      `${method} ${target} HTTP/1.1\r\nHost: upstream.test\r\nUSER-ID: alice\r\n\r\n`,
    );

  it('every variant of a strict target is charged to the strict rule or refused with 400 problem+json', async () => {
    const violations: string[] = [];
    let strictRuns = 0;
    let refusals = 0;
    for (const variant of kind.variants) {
      const res = await send(variant);
      const label = variant.join(' ');
      if (res.status === 400 && res.headers.get('content-type') === 'application/problem+json') {
        refusals++;
        if (kind.strictRan(res) || res.headers.has('x-handler'))
          violations.push(`${label}: refused, yet an upstream handler answered`);
        continue;
      }
      if (!kind.strictRan(res)) continue;
      strictRuns++;
      const rules = chargedRules(res);
      if (rules.length === 0 || rules.some((r) => r !== 'strict'))
        violations.push(
          `${label}: strict handler ran, charged to ${rules.join(',') || 'nothing'} (${res.head})`,
        );
    }
    expect(violations).toEqual([]);
    // Not vacuous: the plain strict target (and HEAD on it) did reach the strict handler, and something was refused.
    expect(strictRuns).toBeGreaterThanOrEqual(2);
    expect(refusals).toBeGreaterThan(0);
  });

  it('HEAD is charged to a rule for GET', async () => {
    const res = await send(['HEAD', (kind.variants[0] as Variant)[1]]);
    expect(kind.strictRan(res)).toBe(true);
    expect(chargedRules(res)).toEqual(['strict']);
  });
});

describe('upgrades behind the sidecar', () => {
  const stack = perDescribe(async (start) => {
    const redis = await start.redis();
    /** Target and USER-ID lines of every upgrade the upstream received. */
    const upgrades: { url: string | undefined; userId: string[] }[] = [];
    const upstream = await start.upstream((_req, res) => res.writeHead(404).end());
    upstream.server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
      upgrades.push({ url: req.url, userId: req.headersDistinct['user-id'] ?? [] });
      socket.end(
        'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
      );
    });
    const sidecar = await start.sidecar(
      {
        upstream: { url: upstream.url },
        route: { id: 'paths' },
        limiter: { ...apiLimiter, onStoreError: 'deny' },
        redis: { url: redis.url, commandTimeoutMs: 5000 },
      },
      { name: 'sidecar-paths-upgrade' },
    );
    return { sidecar, upgrades };
  });

  const upgrade = (target: string, userLines = 'USER-ID: alice\r\n') =>
    rawRequest(
      stack.sidecar.port,
      `GET ${target} HTTP/1.1\r\nHost: upstream.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n${userLines}\r\n`,
    );

  it('an upgrade is matched and forwarded with the same canonical target and one identity', async () => {
    const res = await upgrade(
      '/api/x/../%61dmin/./ws?room=1',
      'USER-ID: alice\r\nUSER-ID: bob\r\nUSER_ID: mallory\r\n',
    );
    expect(res.status).toBe(101);
    expect(chargedRules(res)).toEqual(['strict']);
    expect(stack.upgrades.at(-1)).toEqual({ url: '/api/admin/ws?room=1', userId: ['alice'] });
    const before = stack.upgrades.length;
    const refused = await upgrade('/api/loose#/../admin/ws');
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(stack.upgrades.length).toBe(before);
  });
});
