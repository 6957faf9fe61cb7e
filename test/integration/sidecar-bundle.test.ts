// The sidecar as its image and the rendered pods run it: the esbuild bundle dist/sidecar/main.mjs
// (built by the integration tier's globalSetup) with the container's environment from the operator
// (V8 heap caps, MALLOC_ARENA_MAX). It must behave like the sources: the Lua script found beside
// the bundle, the "Normal" burst exact on real Redis, the admin port ready with metrics, a clean
// SIGTERM; and it must not load TypeScript or the admin framework the sources no longer need.
import { readFileSync } from 'node:fs';
import { Pool } from 'undici';
import { describe, expect } from 'vitest';
import { SIDECAR_ENTRY, SIDECAR_ENV } from '../../operator/resources/route/deployment.ts';
import { test } from '../harness/fixtures.ts';
import { repoRoot } from '../harness/programs.ts';

const it = test
  .extend('sidecar', { scope: 'file' }, ({ start, userService, redis }) =>
    start.sidecar(
      {
        upstream: { url: userService.url },
        route: { id: 'all' },
        limiter: { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 },
        redis: { url: redis.url, commandTimeoutMs: 2000 },
      },
      { name: 'sidecar-bundle', entry: SIDECAR_ENTRY, env: { ...SIDECAR_ENV } },
    ),
  )
  .extend('pool', { scope: 'file' }, ({ sidecar }, { onCleanup }) => {
    const pool = new Pool(sidecar.url, { connections: 40 });
    onCleanup(() => pool.close());
    return pool;
  });

describe('the bundled sidecar, as deployed', () => {
  it('is one self-contained file that needs no TypeScript and no fastify', () => {
    const bundle = readFileSync(`${repoRoot}/${SIDECAR_ENTRY}`, 'utf8');
    expect(bundle).not.toMatch(/from\s*["'](fastify|ioredis|undici|zod|pino|prom-client|yaml)["']/);
    expect(bundle).not.toMatch(/\.ts["']\)/);
    expect(bundle).not.toContain('avvio'); // fastify's plugin loader: the admin port is node:http now
  });

  it('runs with the container environment', ({ sidecar }) => {
    const environ = readFileSync(`/proc/${sidecar.program.child.pid}/environ`, 'utf8').split('\0');
    expect(environ).toEqual(
      expect.arrayContaining([
        `NODE_OPTIONS=${SIDECAR_ENV.NODE_OPTIONS}`,
        `MALLOC_ARENA_MAX=${SIDECAR_ENV.MALLOC_ARENA_MAX}`,
      ]),
    );
  });

  it('limits exactly on Redis: a burst admits 33 of 40 at 3 tokens each from 100', async ({
    pool,
  }) => {
    const get = async (userId: string) => {
      const res = await pool.request({
        method: 'GET',
        path: '/healthcheck/ready',
        headers: { 'user-id': userId },
      });
      return {
        status: res.statusCode,
        body: await res.body.text(),
        limit: res.headers['ratelimit-limit'],
      };
    };
    await Promise.all(Array.from({ length: 40 }, (_, i) => get(`warm-${i}`)));
    const results = await Promise.all(Array.from({ length: 40 }, () => get('bundle-burst')));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(33);
    expect(results.filter((r) => r.status === 429)).toHaveLength(7);
    for (const r of ok) expect(r.body).toBe('OK');
    expect(ok[0]?.limit).toBe('100');
  });

  it('serves its admin port: ready, and the limiter metrics with the Redis store', async ({
    sidecar,
  }) => {
    const ready = await fetch(`http://127.0.0.1:${sidecar.adminPort}/readyz`);
    expect([ready.status, await ready.text()]).toEqual([200, 'ready']);
    const metrics = await (await fetch(`http://127.0.0.1:${sidecar.adminPort}/metrics`)).text();
    expect(metrics).toMatch(/portcullis_sidecar_requests_total\{[^}]*route="all"[^}]*\} \d+/);
    expect(metrics).toContain('store="redis"');
  });

  it('stops cleanly on SIGTERM', async ({ sidecar }) => {
    expect(await sidecar.program.stop('SIGTERM')).toBe(0);
  });
});
