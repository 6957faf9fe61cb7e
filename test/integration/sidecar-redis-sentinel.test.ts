// The Redis store through Redis Sentinel: a master and one sentinel (both real redis-server
// processes on loopback); a sidecar configured with `redis.sentinel` finds the master and limits.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, waitForPort } from '../harness/ports.ts';
import { startRedis, type RedisServer } from '../harness/redis.ts';
import { startSidecar, startUserService, type RunningSidecar } from './sidecar-support.ts';

describe('Redis Sentinel', () => {
  let master: RedisServer;
  let sentinel: ChildProcess;
  let dir: string;
  let user: Awaited<ReturnType<typeof startUserService>>;
  let sidecar: RunningSidecar;

  beforeAll(async () => {
    master = await startRedis();
    const port = await freePort();
    dir = mkdtempSync(path.join(tmpdir(), 'portcullis-sentinel-'));
    const conf = path.join(dir, 'sentinel.conf');
    writeFileSync(conf, `port ${port}\nbind 127.0.0.1\ndir ${dir}\nsentinel monitor portcullis 127.0.0.1 ${master.port} 1\n`);
    sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
    await waitForPort(port);
    user = await startUserService();
    sidecar = await startSidecar({
      upstream: { url: user.url },
      route: { id: 'all' },
      limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 },
      redis: { sentinel: { name: 'portcullis', sentinels: [{ host: '127.0.0.1', port }] }, commandTimeoutMs: 2000 },
    });
  });
  afterAll(async () => {
    await sidecar?.program.stop();
    await user?.program.stop();
    sentinel?.kill('SIGKILL');
    await master?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('finds the master through the sentinel and limits exactly: 5 of a burst of 7', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await request(`${sidecar.url}/healthcheck/ready`, { headers: { 'USER-ID': 'sentinel-user' } });
      await res.body.dump();
      expect(res.headers['ratelimit-limit']).toBe('10'); // a decision from Redis, not fail-open
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
  });
});
