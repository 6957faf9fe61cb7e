// A changed config file is picked up without dropping in-flight requests; an invalid new config is
// logged and the running one kept: the config is a mounted ConfigMap that changes while the pod runs.
import { mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { freePort } from '../harness/ports.ts';
import { startProgram } from '../harness/programs.ts';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import { sleep } from './sidecar-support.ts';

const it = test
  // /slow answers after 1.5 s: long enough to be in flight across a reload.
  .extend('upstream', { scope: 'file' }, ({ start }) =>
    start.upstream((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('slow done'), 1500).unref();
      else res.end('OK');
    }),
  )
  .extend('sidecar', { scope: 'file' }, ({ start, upstream }) =>
    start.sidecar({
      upstream: { url: upstream.url },
      route: { id: 'all', path: '/**' },
      limiter: { replenishRate: 1, burstCapacity: 50, requestedTokens: 1 },
    }),
  )
  .extend('get', { scope: 'file' }, ({ sidecar }) => async (path: string, user = 'reload-user') => {
    const res = await request(`${sidecar.url}${path}`, { headers: { 'USER-ID': user } });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  });

describe('config hot reload', () => {
  it('applies a valid change to new requests while in-flight ones complete', async ({
    sidecar,
    get,
  }) => {
    expect((await get('/x')).headers['ratelimit-limit']).toBe('50');
    const inFlight = Array.from({ length: 5 }, (_, i) => get('/slow', `slow-${i}`));
    await sleep(200);
    sidecar.write({
      ...sidecar.config,
      route: { id: 'all', path: '/api/**' },
      limiter: { replenishRate: 1, burstCapacity: 7, requestedTokens: 1 },
    });
    await sidecar.program.waitForLine(/"msg":"config reloaded"/, 10_000);
    const done = await Promise.all(inFlight);
    for (const r of done) {
      expect(r.status).toBe(200);
      expect(r.body).toBe('slow done');
      expect(r.headers['ratelimit-limit']).toBe('50'); // decided under the old config
    }
    const fresh = await get('/api/thing');
    expect(fresh.status).toBe(200);
    expect(fresh.headers['ratelimit-limit']).toBe('7');
    expect((await get('/outside')).status).toBe(404);
  });

  it('an invalid new config is logged and the running one kept', async ({ sidecar, get }) => {
    sidecar.write({
      ...sidecar.config,
      route: { id: 'all', path: '/api/**' },
      limiter: { replenishRate: 0, burstCapacity: 7 },
    });
    const line = await sidecar.program.waitForLine(/config reload rejected/, 10_000);
    expect(line).toContain('limiter.replenishRate');
    sidecar.write('not: [valid yaml');
    await sidecar.program.waitForLine(/not YAML or JSON.*config reload rejected/, 10_000);
    const still = await get('/api/thing');
    expect(still.status).toBe(200);
    expect(still.headers['ratelimit-limit']).toBe('7');
    expect(sidecar.program.exited()).toBe(false);
  });

  it('a Kubernetes ConfigMap update (atomic ..data symlink swap) is picked up', async ({
    upstream,
  }) => {
    // The kubelet's layout: dir/sidecar.yaml -> ..data/sidecar.yaml, ..data -> ..<timestamp>/;
    // an update writes a new timestamped folder and renames a new ..data symlink over the old.
    const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-configmap-'));
    const version = (name: string, config: unknown) => {
      mkdirSync(path.join(dir, name));
      writeFileSync(path.join(dir, name, 'sidecar.yaml'), stringify(config));
      symlinkSync(name, path.join(dir, '..data_tmp'));
      renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
    };
    const port = await freePort();
    const base = {
      listen: { host: '127.0.0.1', port },
      admin: { host: '127.0.0.1', port: await freePort() },
      upstream: { url: upstream.url },
      route: { id: 'cm' },
    };
    version('..v1', { ...base, limiter: { replenishRate: 1, burstCapacity: 11 } });
    symlinkSync('..data/sidecar.yaml', path.join(dir, 'sidecar.yaml'));
    const program = await startProgram({
      entry: 'sidecar/main.ts',
      args: ['--config', path.join(dir, 'sidecar.yaml')],
      waitPort: port,
      name: 'sidecar-configmap',
    });
    try {
      const limit = async () =>
        (await request(`http://127.0.0.1:${port}/x`, { headers: { 'USER-ID': 'cm' } })).headers[
          'ratelimit-limit'
        ];
      expect(await limit()).toBe('11');
      version('..v2', { ...base, limiter: { replenishRate: 1, burstCapacity: 22 } });
      await program.waitForLine(/"burstCapacity":22.*"msg":"config reloaded"/, 10_000);
      expect(await limit()).toBe('22');
    } finally {
      await program.stop();
    }
  });
});
