// The harness itself: a real redis-server that can be killed and brought back on the same port.
import { Redis } from 'ioredis';
import { describe, expect } from 'vitest';
import { test as it } from '../harness/fixtures.ts';

describe('redis harness', () => {
  it('serves commands, dies on SIGKILL and comes back on the same port empty', async ({
    redis,
  }) => {
    const client = new Redis(redis.url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    await client.connect();
    await client.set('k', 'v');
    expect(await client.get('k')).toBe('v');
    await redis.kill();
    await expect(client.get('k')).rejects.toThrow(/Connection is closed/);
    client.disconnect();

    await redis.start();
    const again = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    expect(await again.get('k')).toBeNull();
    again.disconnect();
  });
});
