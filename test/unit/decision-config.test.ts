// The sidecar config's decision mode: no upstream needed there (and still required in proxy
// mode), the decision block's defaults, and trustedProxies holding only addresses and CIDR blocks.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseSidecarConfig } from '../../lib/config/sidecar.ts';

const base = { route: { id: 'all' }, limiter: { replenishRate: 1, burstCapacity: 10 } };

describe('sidecar config: mode', () => {
  it('proxy mode (the default) still requires upstream, naming the field', () => {
    expect(() => parseSidecarConfig(base)).toThrow(ConfigError);
    expect(() => parseSidecarConfig(base)).toThrow(/upstream: upstream is required in proxy mode/);
  });

  it('decision mode needs no upstream and defaults its block', () => {
    const c = parseSidecarConfig({ ...base, mode: 'decision' });
    expect(c.mode).toBe('decision');
    expect(c.upstream).toBeUndefined();
    expect(c.decision).toEqual({ pathPrefix: '', trustedProxies: [] });
  });

  it('accepts addresses and CIDR blocks of both families in trustedProxies', () => {
    const c = parseSidecarConfig({
      ...base,
      mode: 'decision',
      decision: {
        trustedProxies: ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8'],
        grpc: { port: 9191 },
      },
    });
    expect(c.decision.trustedProxies).toHaveLength(4);
    expect(c.decision.grpc).toEqual({ host: '0.0.0.0', port: 9191 });
  });

  it.each(['10.0.0.0/33', 'example.com', '10.0.0.1/8/1', '::1/129', '10.0.0.0/'])(
    'refuses %s as a trusted proxy',
    (entry) => {
      expect(() =>
        parseSidecarConfig({ ...base, mode: 'decision', decision: { trustedProxies: [entry] } }),
      ).toThrow(/decision\.trustedProxies\.0/);
    },
  );

  it('refuses a path prefix with a trailing slash', () => {
    expect(() =>
      parseSidecarConfig({ ...base, mode: 'decision', decision: { pathPrefix: '/authz/' } }),
    ).toThrow(/decision\.pathPrefix/);
  });
});
