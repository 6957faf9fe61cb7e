// The sidecar config schema (lib/config/sidecar.ts): defaults, the operator's shape, and errors that
// name the field.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  deprecatedOptions,
  parseSidecarConfig,
  parseSidecarConfigText,
  sidecarConfigSchema,
} from '../../lib/config/sidecar.ts';
import { limiterFormRule } from '../../lib/config/limiter.ts';

const minimal = {
  upstream: { url: 'http://127.0.0.1:8081' },
  route: { id: 'all' },
  limiter: { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 },
};

describe('sidecar config', () => {
  it('fills defaults: ports 8080/9090, /**, USER-ID, 400, allow, spec+draft headers, memory store', () => {
    const c = parseSidecarConfig(minimal);
    expect(c.listen.port).toBe(8080);
    expect(c.admin.port).toBe(9090);
    expect(c.route.path).toBe('/**');
    expect(c.limiter).toMatchObject({
      keyHeader: 'USER-ID',
      onMissingKey: { status: 400 },
      onStoreError: 'allow',
      headers: { fields: true, draft: true, spring: false },
    });
    expect(c.redis).toBeUndefined();
  });

  it('limiter.headers.spec, the former name of fields, still works and is reported as deprecated', () => {
    const withOld = (spec: boolean) =>
      parseSidecarConfig({ ...minimal, limiter: { ...minimal.limiter, headers: { spec } } });
    expect(withOld(false).limiter.headers).toMatchObject({ fields: false, draft: true });
    expect(withOld(true).limiter.headers).toMatchObject({ fields: true });
    expect(deprecatedOptions(withOld(false))).toEqual([
      expect.stringContaining('rename it to limiter.headers.fields'),
    ]);
    expect(
      deprecatedOptions(
        parseSidecarConfig({
          ...minimal,
          limiter: { ...minimal.limiter, headers: { fields: false } },
        }),
      ),
    ).toEqual([]);
    expect(deprecatedOptions(parseSidecarConfig(minimal))).toEqual([]);
    expect(() =>
      parseSidecarConfig({
        ...minimal,
        limiter: { ...minimal.limiter, headers: { spec: true, fields: false } },
      }),
    ).toThrow(/limiter\.headers\.spec: spec is the former name of fields/);
  });

  it('paths: slashes merged and case kept by default; a pattern must be written in the canonical form requests are matched in', () => {
    expect(parseSidecarConfig(minimal).route).toMatchObject({
      mergeSlashes: true,
      caseInsensitivePaths: false,
    });
    const rules = (path: string) => ({
      ...minimal,
      limiter: { rules: [{ name: 'r', path, limits: [{ replenishRate: 1, burstCapacity: 1 }] }] },
    });
    for (const ok of ['/api/admin/**', '/v?/x', '/files/*.txt', '/a%20b/**', '/.well-known/**'])
      expect(() => parseSidecarConfig(rules(ok))).not.toThrow();
    expect(() => parseSidecarConfig(rules('/api/%61dmin/**'))).toThrow(
      'limiter.rules.0.path: requests are matched in canonical form (escapes of letters, digits and -._~ decoded, hex in upper case, dot-segments resolved, // merged), so this pattern could never match as written: write /api/admin/**',
    );
    expect(() => parseSidecarConfig(rules('/api/../admin/**'))).toThrow(/write \/admin\/\*\*/);
    expect(() => parseSidecarConfig(rules('/api//admin'))).toThrow(/write \/api\/admin/);
    expect(() => parseSidecarConfig(rules('/a%c3%a9'))).toThrow(/write \/a%C3%A9/);
    expect(() =>
      parseSidecarConfig({ ...minimal, route: { id: 'all', path: '/api#x/**' } }),
    ).toThrow(/route\.path: .*could never match: The request target must not contain #/);
    expect(() => parseSidecarConfig(rules('/api\\admin'))).toThrow(/backslash/);
  });

  it('listen.requestTimeoutMs: an idle request-body timeout, 60 s by default, 0 disables, never negative', () => {
    expect(parseSidecarConfig(minimal).listen.requestTimeoutMs).toBe(60_000);
    expect(parseSidecarConfig({ ...minimal, listen: {} }).listen.requestTimeoutMs).toBe(60_000);
    expect(
      parseSidecarConfig({ ...minimal, listen: { requestTimeoutMs: 0 } }).listen.requestTimeoutMs,
    ).toBe(0);
    expect(() => parseSidecarConfig({ ...minimal, listen: { requestTimeoutMs: -1 } })).toThrow(
      /listen\.requestTimeoutMs/,
    );
  });

  it('reads YAML and JSON with redis url, sentinel or cluster', () => {
    const yaml = `
upstream: { url: http://127.0.0.1:8081 }
route: { id: all, path: /** }
limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2, onStoreError: deny, headers: { spring: true } }
redis: { url: redis://redis:6379, keyPrefix: "pc:", commandTimeoutMs: 30 }
`;
    expect(parseSidecarConfigText(yaml).redis).toMatchObject({
      url: 'redis://redis:6379',
      keyPrefix: 'pc:',
      commandTimeoutMs: 30,
    });
    expect(
      parseSidecarConfigText(
        JSON.stringify({
          ...minimal,
          redis: { sentinel: { name: 'mymaster', sentinels: [{ host: 's1', port: 26379 }] } },
        }),
      ).redis?.sentinel?.name,
    ).toBe('mymaster');
    expect(
      parseSidecarConfig({
        ...minimal,
        redis: { cluster: { nodes: [{ host: 'c1', port: 6379 }] } },
      }).redis?.cluster?.nodes,
    ).toHaveLength(1);
  });

  it('names every bad field by its path', () => {
    const bad = {
      ...minimal,
      upstream: { url: 'http://host/with/path' },
      limiter: { replenishRate: 1.5, burstCapacity: 2, requestedTokens: 3, onStoreError: 'maybe' },
      redis: { url: 'redis://a', cluster: { nodes: [{ host: 'b', port: 1 }] } },
      extra: true,
    };
    let message = '';
    try {
      parseSidecarConfig(bad);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    for (const field of [
      'upstream.url',
      'limiter.replenishRate',
      'limiter.onStoreError',
      'redis',
      'extra',
    ])
      expect(message).toContain(field);
    expect(() =>
      parseSidecarConfig({
        ...minimal,
        limiter: { replenishRate: 1, burstCapacity: 2, requestedTokens: 3 },
      }),
    ).toThrow(/limiter.requestedTokens/);
  });

  it('rules: ordered, each with 1 to 4 limits (requestedTokens 1 by default, never above burstCapacity), names unique, not beside the single-limit form', () => {
    const rules = [
      {
        name: 'search',
        path: '/api/search',
        methods: ['GET'],
        limits: [
          { replenishRate: 10, burstCapacity: 20 },
          { replenishRate: 1, burstCapacity: 1000, requestedTokens: 2 },
        ],
      },
      { name: 'rest', limits: [{ replenishRate: 100, burstCapacity: 100 }], enforce: false },
    ];
    const limiter = parseSidecarConfig({ ...minimal, limiter: { rules } }).limiter;
    expect(
      limiter.rules?.map((r) => [r.name, r.path, r.limits.map((l) => l.requestedTokens)]),
    ).toEqual([
      ['search', '/api/search', [1, 2]],
      ['rest', '/**', [1]],
    ]);
    expect(limiter).toMatchObject({ unmatched: 'forward', enforce: true, key: 'header' });
    const limit = { replenishRate: 1, burstCapacity: 1 };
    expect(() =>
      parseSidecarConfig({ ...minimal, limiter: { ...minimal.limiter, rules } }),
    ).toThrow(limiterFormRule.message);
    expect(() =>
      parseSidecarConfig({
        ...minimal,
        limiter: {
          rules: [
            { name: 'a', limits: [limit] },
            { name: 'a', limits: [limit] },
          ],
        },
      }),
    ).toThrow(/rule names must be unique/);
    expect(() =>
      parseSidecarConfig({
        ...minimal,
        limiter: { rules: [{ name: 'a', limits: Array.from({ length: 5 }, () => limit) }] },
      }),
    ).toThrow(/limiter\.rules\.0\.limits/);
    expect(() =>
      parseSidecarConfig({
        ...minimal,
        limiter: { rules: [{ name: 'a', limits: [{ ...limit, requestedTokens: 2 }] }] },
      }),
    ).toThrow(/requestedTokens must not exceed burstCapacity/);
    expect(() =>
      parseSidecarConfig({
        ...minimal,
        limiter: { rules: [{ name: 'a', methods: ['get'], limits: [limit] }] },
      }),
    ).toThrow(/limiter\.rules\.0\.methods\.0/);
  });

  it('key jwt: needs its verification settings (and they need it), with sub, ES256/RS256, a 10,000-token cache and a 30 s JWKS cooldown by default; symmetric algorithms refused', () => {
    const jwt = {
      issuer: 'http://auth.test',
      audience: 'urn:portcullis:user-service',
      jwksUrl: 'http://auth.test/jwks.json',
    };
    expect(
      parseSidecarConfig({ ...minimal, limiter: { ...minimal.limiter, key: 'jwt', jwt } }).limiter
        .jwt,
    ).toEqual({
      ...jwt,
      claim: 'sub',
      algorithms: ['ES256', 'RS256'],
      cacheSize: 10_000,
      jwksCooldownMs: 30_000,
      jwksTimeoutMs: 2000,
    });
    expect(() =>
      parseSidecarConfig({ ...minimal, limiter: { ...minimal.limiter, key: 'jwt' } }),
    ).toThrow(/jwt settings are required with key jwt/);
    expect(() => parseSidecarConfig({ ...minimal, limiter: { ...minimal.limiter, jwt } })).toThrow(
      /jwt settings are required with key jwt, and only then/,
    );
    expect(() =>
      parseSidecarConfig({
        ...minimal,
        limiter: { ...minimal.limiter, key: 'jwt', jwt: { ...jwt, algorithms: ['HS256'] } },
      }),
    ).toThrow(/limiter\.jwt\.algorithms\.0/);
    expect(() =>
      parseSidecarConfig({
        ...minimal,
        limiter: {
          ...minimal.limiter,
          key: 'jwt',
          jwt: { ...jwt, jwksUrl: 'file:///etc/jwks.json' },
        },
      }),
    ).toThrow(/limiter\.jwt\.jwksUrl/);
  });

  it('exports a JSON Schema with descriptions (for the operator and docs)', () => {
    const schema = z.toJSONSchema(sidecarConfigSchema, { io: 'input' }) as {
      properties: Record<string, { description?: string }>;
    };
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['listen', 'admin', 'upstream', 'route', 'limiter', 'redis']),
    );
    expect(schema.properties.limiter?.description).toMatch(/RequestRateLimiter/);
  });
});
