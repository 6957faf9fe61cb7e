// A real redis-server for one test file: started on a free loopback port, persistence off,
// stopped in afterAll. Tests never use a Redis that somebody else started.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { parse } from 'yaml';
import { freePort, waitForPort } from './ports.ts';

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** Starts the server again on the same port (after kill or stop). */
  start(): Promise<void>;
  /** SIGKILL: the server vanishes without closing its connections cleanly. */
  kill(): Promise<void>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
}

/**
 * The arguments one of the chart's bundled Redis instances runs with at the chart's default values
 * (`auth-redis`: the auth servers' security state; `redis`: the limiter's buckets), read from its
 * template (charts/portcullis/templates/redis.yaml), so tests that must match it cannot drift from
 * it. The computed arguments, maxmemory (three quarters of the memory limit in values.yaml) and the
 * policy each instance is given, are worked out here the way the chart does; the k8s tier checks
 * both agree under helm. `$(NAME)` references to the container's env (the password, from the chart's
 * Secret) are expanded from `env` as the kubelet does, and left as they are when `env` lacks them.
 */
export function chartRedisArgs(
  component: 'auth-redis' | 'redis' = 'auth-redis',
  env: Record<string, string> = {},
): string[] {
  const chart = path.join(
    path.dirname(fileURLToPath(import.meta.url)),
    '..',
    '..',
    'charts',
    'portcullis',
  );
  const template = readFileSync(path.join(chart, 'templates', 'redis.yaml'), 'utf8');
  const line = /^\s*args:\s*(\[.*\])\s*$/m.exec(template);
  if (line?.[1] === undefined) throw new Error("the chart's redis.yaml has no args line");
  const policy = new RegExp(
    `include "portcullis.bundledRedis" \\(dict "root" \\. "component" "${component}" "policy" "([a-z-]+)"[^)]*\\)`,
  ).exec(template)?.[1];
  if (policy === undefined) throw new Error(`the chart's redis.yaml renders no ${component}`);
  const values = parse(readFileSync(path.join(chart, 'values.yaml'), 'utf8')) as {
    redis: { resources: { limits: { memory: string } } };
  };
  const maxmemory = String((memoryBytes(values.redis.resources.limits.memory) * 3) / 4);
  const json = line[1]
    .replace('"{{ include "portcullis.redisMaxmemory" $root }}"', JSON.stringify(maxmemory))
    .replace('"{{ .policy }}"', JSON.stringify(policy));
  if (json.includes('{{'))
    throw new Error(`the chart's Redis args hold a template this helper does not know: ${line[1]}`);
  return (JSON.parse(json) as string[]).map((arg) =>
    arg.replace(/\$\(([A-Z_][A-Z0-9_]*)\)/g, (ref, name: string) => env[name] ?? ref),
  );
}

function memoryBytes(quantity: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(quantity);
  if (m?.[1] === undefined) throw new Error(`unsupported memory quantity ${quantity}`);
  const factor = m[2] === 'Gi' ? 1024 ** 3 : m[2] === 'Mi' ? 1024 ** 2 : m[2] === 'Ki' ? 1024 : 1;
  return Number(m[1]) * factor;
}

/** `password`: the one the arguments give redis-server (--requirepass), put into `url`. */
export async function startRedis(
  extraArgs: string[] = [],
  options: { password?: string } = {},
): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-redis-'));
  let child: ChildProcess | undefined;

  const waitExit = (proc: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) resolve();
      else proc.once('exit', () => resolve());
    });

  const server: RedisServer = {
    port,
    url:
      options.password === undefined
        ? `redis://127.0.0.1:${port}`
        : `redis://:${encodeURIComponent(options.password)}@127.0.0.1:${port}`,
    async start() {
      if (child && child.exitCode === null && child.signalCode === null) return;
      const proc = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          dir,
          ...extraArgs,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      proc.once('error', (err) => {
        throw new Error(
          `redis-server did not start (is Debian's redis-server installed? make test installs it): ${err.message}`,
        );
      });
      child = proc;
      await waitForPort(port, 10_000);
    },
    async kill() {
      if (!child) return;
      const proc = child;
      proc.kill('SIGKILL');
      await waitExit(proc);
    },
    async stop() {
      if (!child) return;
      const proc = child;
      proc.kill('SIGTERM');
      await waitExit(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

export interface RedisClusterServer {
  /** The masters, each owning a third (for three) of the 16,384 slots. */
  readonly nodes: readonly RedisServer[];
  /** Seed nodes as the sidecar's `redis.cluster.nodes` takes them. */
  readonly seeds: { host: string; port: number }[];
  /** Stops every node and removes their folders. */
  stop(): Promise<void>;
}

/**
 * A real Redis Cluster of `shards` masters on loopback (no replicas), slots split evenly by
 * `redis-cli --cluster create`; resolves once every node reports cluster_state:ok.
 */
export async function startRedisCluster(shards = 3): Promise<RedisClusterServer> {
  const nodes: RedisServer[] = [];
  const stopAll = async () => {
    for (const n of nodes) await n.stop();
  };
  try {
    for (let i = 0; i < shards; i++) {
      // nodes.conf lands in each server's own folder (--dir), removed on stop.
      nodes.push(
        await startRedis(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf']),
      );
    }
    const created = spawnSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { encoding: 'utf8' },
    );
    if (created.status !== 0)
      throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    for (const n of nodes) {
      for (let i = 0; ; i++) {
        const info = spawnSync('redis-cli', ['-p', String(n.port), 'cluster', 'info'], {
          encoding: 'utf8',
        }).stdout;
        if (info.includes('cluster_state:ok')) break;
        if (i === 200) throw new Error(`cluster node ${n.port} never reported cluster_state:ok`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  return { nodes, seeds: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })), stop: stopAll };
}

/** Calls of `command` (EVALSHA by default: the bucket script) one redis-server has run so far (INFO commandstats). */
export async function scriptCalls(node: Redis, command = 'evalsha'): Promise<number> {
  const m = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(await node.info('commandstats'));
  return m === null ? 0 : Number(m[1]);
}
