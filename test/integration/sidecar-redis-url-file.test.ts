// redis.urlFile end to end: a sidecar whose Redis URL comes from a file (a mounted Secret key)
// limits exactly in that Redis; when the file is rewritten the way the kubelet rotates a Secret
// volume (new timestamped folder, ..data symlink swapped), the sidecar moves to the new Redis
// without dropping a request in flight.
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import type { RedisServer } from '../harness/redis.ts';
import { sleep } from './sidecar-support.ts';

const bucketIn = async (server: RedisServer, user: string) => {
  const client = new Redis(server.url);
  try {
    return await client.exists(`portcullis:bucket:v2:{all:${user}}`);
  } finally {
    client.disconnect();
  }
};

const it = test
  .extend('redisA', { scope: 'file' }, ({ start }) => start.redis())
  .extend('redisB', { scope: 'file' }, ({ start }) => start.redis())
  .extend('secretDir', { scope: 'file' }, ({ start }) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-redis-secret-'));
    start.defer(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  })
  /** Writes the Secret volume as the kubelet does: a new folder, then an atomic ..data swap. */
  .extend('writeSecret', { scope: 'file' }, ({ secretDir }) => {
    let version = 0;
    return (url: string) => {
      const folder = `..2026_11_22_${version++}`;
      mkdirSync(path.join(secretDir, folder));
      writeFileSync(path.join(secretDir, folder, 'url'), url);
      symlinkSync(folder, path.join(secretDir, '..data_tmp'));
      renameSync(path.join(secretDir, '..data_tmp'), path.join(secretDir, '..data'));
    };
  })
  .extend('sidecar', { scope: 'file' }, async ({ start, redisA, secretDir, writeSecret }) => {
    // /slow answers after 1.5 s: in flight across the switch.
    const upstream = await start.upstream((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('slow done'), 1500).unref();
      else res.end('OK');
    });
    writeSecret(`${redisA.url}\n`);
    symlinkSync('..data/url', path.join(secretDir, 'url'));
    return start.sidecar({
      upstream: { url: upstream.url },
      route: { id: 'all', path: '/**' },
      // Cost 5 of 10 at 1 token/s: two requests pass, a third within 5 s is limited.
      limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 5, onStoreError: 'deny' },
      redis: { urlFile: path.join(secretDir, 'url'), commandTimeoutMs: 500 },
    });
  })
  .extend('get', { scope: 'file' }, ({ sidecar }) => async (p: string, user: string) => {
    const res = await request(`${sidecar.url}${p}`, { headers: { 'USER-ID': user } });
    return { status: res.statusCode, body: await res.body.text() };
  });

describe('redis.urlFile', () => {
  it('limits exactly in the Redis the file names', async ({ redisA, redisB, sidecar, get }) => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await get('/x', 'alice')).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect(await bucketIn(redisA, 'alice')).toBe(1);
    expect(await bucketIn(redisB, 'alice')).toBe(0);
    expect(sidecar.program.lines.join('\n')).not.toContain(redisA.url); // the URL may carry a password
  });

  it('moves to the Redis of a rewritten file without dropping in-flight requests', async ({
    redisA,
    redisB,
    sidecar,
    get,
    writeSecret,
  }) => {
    const inFlight = Array.from({ length: 5 }, (_, i) => get('/slow', `slow-${i}`));
    // A steady stream of requests across the switch (distinct users: none is limited).
    let streaming = true;
    const streamed: number[] = [];
    const stream = (async () => {
      for (let i = 0; streaming; i++) streamed.push((await get('/x', `stream-${i}`)).status);
    })();
    await sleep(200);
    writeSecret(redisB.url);
    await sidecar.program.waitForLine(/store settings changed/, 10_000);
    await sleep(200);
    streaming = false;
    await stream;
    const done = await Promise.all(inFlight);
    expect(done.map((r) => `${r.status} ${r.body}`)).toEqual(Array(5).fill('200 slow done'));
    expect(streamed.length).toBeGreaterThan(0);
    expect(streamed.every((s) => s === 200)).toBe(true);

    // With A gone a request still on A would get 503 (onStoreError deny): B decides, exactly.
    await redisA.stop();
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await get('/x', 'alice')).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect(await bucketIn(redisB, 'alice')).toBe(1);
  });

  it('keeps the running store when the file is rewritten with something that is not a Redis URL', async ({
    redisB,
    sidecar,
    get,
    writeSecret,
  }) => {
    writeSecret('not a url');
    await sidecar.program.waitForLine(
      /redis.urlFile unreadable or invalid; keeping the running store/,
      10_000,
    );
    expect((await get('/x', 'bob')).status).toBe(200);
    expect(await bucketIn(redisB, 'bob')).toBe(1);
    expect(sidecar.program.lines.join('\n')).not.toContain(redisB.url);
  });
});
