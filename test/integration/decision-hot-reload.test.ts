// The decision service follows its config file like the proxy: new limits apply to the next
// check without a restart, and a broken file keeps the running config.
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import { eventually } from '../harness/eventually.ts';
import { startDecision } from './decision-support.ts';

describe('decision service hot reload', () => {
  test('applies new limits to the next checks; keeps the running config on a broken file', async ({
    start,
  }) => {
    const decision = await startDecision(start, {
      route: { id: 'all' },
      limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 },
      logLevel: 'info',
    });
    const policy = async () =>
      (await request(`${decision.url}/x`, { headers: { 'user-id': `u-${Math.random()}` } }))
        .headers['ratelimit-policy'];
    expect(await policy()).toBe('"default";q=10;w=10');

    decision.write({
      ...decision.config,
      limiter: { replenishRate: 5, burstCapacity: 50, requestedTokens: 1 },
    });
    await eventually('the new limits', async () => (await policy()) === '"default";q=50;w=10');

    decision.write('limiter: [');
    await decision.program.waitForLine(/config reload rejected/);
    expect(await policy()).toBe('"default";q=50;w=10');
  });
});
