// The Redis store through Redis Sentinel: a master and one sentinel (both real redis-server
// processes on loopback); a sidecar configured with `redis.sentinel` finds the master and limits.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import { freePort, waitForPort } from '../harness/ports.ts';

const it = test
  /** A sentinel (redis-server --sentinel) monitoring the file's Redis as master `portcullis`; resolves to its port. */
  .extend('sentinelPort', { scope: 'file' }, async ({ start, redis }) => {
    const port = await freePort();
    const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-sentinel-'));
    const conf = path.join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      `port ${port}\nbind 127.0.0.1\ndir ${dir}\nsentinel monitor portcullis 127.0.0.1 ${redis.port} 1\n`,
    );
    const sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
    start.defer(() => {
      sentinel.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });
    await waitForPort(port);
    return port;
  })
  .extend('sidecar', { scope: 'file' }, ({ start, userService, sentinelPort }) =>
    start.sidecar({
      upstream: { url: userService.url },
      route: { id: 'all' },
      limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 },
      redis: {
        sentinel: { name: 'portcullis', sentinels: [{ host: '127.0.0.1', port: sentinelPort }] },
        commandTimeoutMs: 2000,
      },
    }),
  );

describe('Redis Sentinel', () => {
  it('finds the master through the sentinel and limits exactly: 5 of a burst of 7', async ({
    sidecar,
  }) => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await request(`${sidecar.url}/healthcheck/ready`, {
        headers: { 'USER-ID': 'sentinel-user' },
      });
      await res.body.dump();
      expect(res.headers['ratelimit-limit']).toBe('10'); // a decision from Redis, not fail-open
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
  });
});
