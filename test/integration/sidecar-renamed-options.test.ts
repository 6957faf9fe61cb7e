// A renamed option keeps working under its old name, and the sidecar says at start and on every
// reload that it should be renamed: limiter.headers.spec is now limiter.headers.fields.
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';

const deprecated =
  /"level":40,.*"msg":"limiter\.headers\.spec is deprecated: rename it to limiter\.headers\.fields/;

const it = test.extend('sidecar', { scope: 'file' }, ({ start, userService }) =>
  start.sidecar({
    upstream: { url: userService.url },
    route: { id: 'all' },
    limiter: { replenishRate: 1, burstCapacity: 50, requestedTokens: 1, headers: { spec: false } },
  }),
);

describe('limiter.headers.spec, the former name of limiter.headers.fields', () => {
  it('still switches the RateLimit-Limit set, with a warning at start and on reload', async ({
    sidecar,
  }) => {
    const headers = async () =>
      (await request(`${sidecar.url}/healthcheck/ready`, { headers: { 'USER-ID': 'renamed' } }))
        .headers;
    await sidecar.program.waitForLine(deprecated, 10_000);
    const off = await headers();
    expect(off['ratelimit-limit']).toBeUndefined();
    expect(off['ratelimit-policy']).toBeDefined(); // the draft set, on by default

    const warnings = () => sidecar.program.lines.filter((l) => deprecated.test(l)).length;
    const before = warnings();
    sidecar.write({
      ...sidecar.config,
      limiter: { replenishRate: 1, burstCapacity: 50, requestedTokens: 1, headers: { spec: true } },
    });
    await sidecar.program.waitForLine(/"msg":"config reloaded"/, 10_000);
    expect((await headers())['ratelimit-limit']).toBe('50');
    expect(warnings()).toBe(before + 1);

    sidecar.write({
      ...sidecar.config,
      limiter: {
        replenishRate: 1,
        burstCapacity: 50,
        requestedTokens: 1,
        headers: { fields: false },
      },
    });
    await expect
      .poll(async () => (await headers())['ratelimit-limit'], { timeout: 10_000 })
      .toBeUndefined();
    expect(warnings()).toBe(before + 1);
  });
});
