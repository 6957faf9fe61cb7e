// The sidecar config schema (sidecar/config.ts): defaults, the operator's shape, and errors that
// name the field.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, parseSidecarConfig, parseSidecarConfigText, sidecarConfigSchema } from '../../sidecar/config.ts';

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
    expect(c.limiter).toMatchObject({ keyHeader: 'USER-ID', onMissingKey: { status: 400 }, onStoreError: 'allow', headers: { spec: true, draft: true, spring: false } });
    expect(c.redis).toBeUndefined();
  });

  it('listen.requestTimeoutMs: an idle request-body timeout, 60 s by default, 0 disables, never negative', () => {
    expect(parseSidecarConfig(minimal).listen.requestTimeoutMs).toBe(60_000);
    expect(parseSidecarConfig({ ...minimal, listen: {} }).listen.requestTimeoutMs).toBe(60_000);
    expect(parseSidecarConfig({ ...minimal, listen: { requestTimeoutMs: 0 } }).listen.requestTimeoutMs).toBe(0);
    expect(() => parseSidecarConfig({ ...minimal, listen: { requestTimeoutMs: -1 } })).toThrow(/listen\.requestTimeoutMs/);
  });

  it('reads YAML and JSON with redis url, sentinel or cluster', () => {
    const yaml = `
upstream: { url: http://127.0.0.1:8081 }
route: { id: all, path: /** }
limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2, onStoreError: deny, headers: { spring: true } }
redis: { url: redis://redis:6379, keyPrefix: "pc:", commandTimeoutMs: 30 }
`;
    expect(parseSidecarConfigText(yaml).redis).toMatchObject({ url: 'redis://redis:6379', keyPrefix: 'pc:', commandTimeoutMs: 30 });
    expect(parseSidecarConfigText(JSON.stringify({ ...minimal, redis: { sentinel: { name: 'mymaster', sentinels: [{ host: 's1', port: 26379 }] } } })).redis?.sentinel?.name).toBe('mymaster');
    expect(parseSidecarConfig({ ...minimal, redis: { cluster: { nodes: [{ host: 'c1', port: 6379 }] } } }).redis?.cluster?.nodes).toHaveLength(1);
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
    for (const field of ['upstream.url', 'limiter.replenishRate', 'limiter.onStoreError', 'redis', 'extra']) expect(message).toContain(field);
    expect(() => parseSidecarConfig({ ...minimal, limiter: { replenishRate: 1, burstCapacity: 2, requestedTokens: 3 } })).toThrow(/limiter.requestedTokens/);
  });

  it('exports a JSON Schema with descriptions (for the operator and docs)', () => {
    const schema = z.toJSONSchema(sidecarConfigSchema, { io: 'input' }) as { properties: Record<string, { description?: string }> };
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['listen', 'admin', 'upstream', 'route', 'limiter', 'redis']));
    expect(schema.properties.limiter?.description).toMatch(/RequestRateLimiter/);
  });
});
