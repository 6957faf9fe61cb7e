// The Redis store on a real Redis Cluster (three redis-server masters on loopback): the hash-tagged
// bucket key lives in one slot, the one Lua script runs there, and a sidecar configured with
// `redis.cluster` limits exactly as on a single node.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Cluster } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeUs, type BucketRule, type BucketState } from '../../sidecar/bucket.ts';
import { RedisBucketStore } from '../../sidecar/stores/redis.ts';
import { freePort, waitForPort } from '../harness/ports.ts';
import { sleep, startSidecar, startUserService, type RunningSidecar } from './sidecar-support.ts';

const rule: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 };

describe('Redis Cluster', () => {
  const nodes: { port: number; proc: ChildProcess; dir: string }[] = [];
  let cluster: Cluster;
  let user: Awaited<ReturnType<typeof startUserService>>;
  let sidecar: RunningSidecar;

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-cluster-'));
      const proc = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, 'nodes.conf'), '--save', '', '--appendonly', 'no', '--dir', dir],
        { stdio: 'ignore' },
      );
      nodes.push({ port, proc, dir });
      await waitForPort(port);
    }
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8' });
    expect(created.status, created.stdout + created.stderr).toBe(0);
    // Wait until every node agrees the cluster is up.
    for (const n of nodes) {
      for (let i = 0; i < 100; i++) {
        const info = spawnSync('redis-cli', ['-p', String(n.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout;
        if (info.includes('cluster_state:ok')) break;
        await sleep(100);
      }
    }
    cluster = new Cluster(nodes.map((n) => ({ host: '127.0.0.1', port: n.port })));
    user = await startUserService();
    sidecar = await startSidecar({
      upstream: { url: user.url },
      route: { id: 'all' },
      limiter: { ...rule },
      redis: { cluster: { nodes: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })) }, commandTimeoutMs: 2000 },
    });
  });
  afterAll(async () => {
    await sidecar?.program.stop();
    await user?.program.stop();
    cluster?.disconnect();
    for (const n of nodes) {
      n.proc.kill('SIGKILL');
      rmSync(n.dir, { recursive: true, force: true });
    }
  });

  it('the store gives the pure function\'s decisions, with the key in one slot and a TTL', async () => {
    const store = new RedisBucketStore({ cluster: { nodes: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })) }, commandTimeoutMs: 2000 });
    await store.ready();
    try {
      let state: BucketState | undefined;
      for (let i = 0; i < 12; i++) {
        const lua = await store.takeRaw('all:cluster-direct', rule);
        const pure = takeUs(state, rule, lua.nowUs, 2);
        state = pure.state;
        expect(lua.decision).toEqual(pure.decision);
      }
      const key = store.keyOf('all:cluster-direct');
      expect(key).toBe('portcullis:bucket:{all:cluster-direct}');
      expect(await cluster.pttl(key)).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });

  it('a sidecar on the cluster limits exactly: 5 of a burst of 7 (10 tokens, 2 each)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await request(`${sidecar.url}/healthcheck/ready`, { headers: { 'USER-ID': 'cluster-user' } });
      await res.body.dump();
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(await cluster.hget('portcullis:bucket:{all:cluster-user}', 't')).not.toBeNull();
  });
});
