// The one way a test file starts the stacks it runs against (redis-server, the user service,
// sidecars, the auth server, a hand-written upstream). Each is a file-scoped fixture of `test`:
// it starts when the first test (or hook) that names it runs and stops after the file's last test,
// everything in the reverse order it started, so a test names what it needs and nothing else:
//
//   const it = test.extend('sidecar', { scope: 'file' }, ({ start, userService, redis }) =>
//     start.sidecar({ upstream: { url: userService.url }, route: { id: 'all' }, limiter, redis: { url: redis.url } }));
//   it('limits', async ({ sidecar }) => { ... });
//
// `start` is the fixture that owns the stopping: whatever a file's own fixture starts through it
// is stopped with the rest. A describe block that needs a stack of its own (describe.each over the
// stores, or several describes with other settings) takes it from perDescribe() (or stackOn() for
// the sign-in stack), which starts and stops the same things around that block.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, test as base } from 'vitest';
import { startStack, type Stack, type StackOptions } from './auth-stack.ts';
import {
  startSidecar,
  startUserService,
  type RunningService,
  type RunningSidecar,
  type SidecarConfig,
  type SidecarLaunch,
} from './programs.ts';
import {
  chartRedisArgs,
  startRedis,
  startRedisCluster,
  type RedisClusterServer,
  type RedisServer,
} from './redis.ts';

export interface Upstream {
  readonly server: http.Server;
  readonly port: number;
  /** Base URL, http://127.0.0.1:port. */
  readonly url: string;
}

/** Starts things and stops them all, the last started first. */
export interface Starter {
  redis(args?: string[], options?: { password?: string }): Promise<RedisServer>;
  /** A Redis Cluster of `shards` masters (three by default). */
  redisCluster(shards?: number): Promise<RedisClusterServer>;
  /** An ioredis client (disconnected at the end). */
  redisClient(url: string): Redis;
  redisClusterClient(server: RedisClusterServer): Cluster;
  userService(env?: Record<string, string>): Promise<RunningService>;
  sidecar(config: SidecarConfig, launch?: SidecarLaunch): Promise<RunningSidecar>;
  /** `count` sidecars of one config (replicas of a route), one after another, named `${name}-0` ... */
  sidecars(count: number, config: SidecarConfig, name?: string): Promise<RunningSidecar[]>;
  /** The sign-in stack (test/integration/auth-stack.ts). */
  authStack(options?: StackOptions): Promise<Stack>;
  /** A node:http server on a free loopback port answering with `handler`. */
  upstream(handler: http.RequestListener): Promise<Upstream>;
  /** Any other teardown, run in the same order as the stops. */
  defer(teardown: () => unknown): void;
  /** Stops everything started so far, the last started first. */
  stopAll(): Promise<void>;
}

export function starter(): Starter {
  const teardowns: (() => unknown)[] = [];
  const started = <T>(value: T, stop: (v: T) => unknown): T => {
    teardowns.push(() => stop(value));
    return value;
  };
  return {
    redis: async (args, options) => started(await startRedis(args, options), (r) => r.stop()),
    redisCluster: async (shards = 3) => started(await startRedisCluster(shards), (c) => c.stop()),
    redisClient: (url) => started(new Redis(url), (c) => c.disconnect()),
    redisClusterClient: (server) => started(new Cluster(server.seeds), (c) => c.disconnect()),
    userService: async (env) => started(await startUserService(env), (s) => s.program.stop()),
    sidecar: async (config, launch) =>
      started(await startSidecar(config, launch), (s) => s.program.stop()),
    async sidecars(count, config, name = 'sidecar') {
      const all: RunningSidecar[] = [];
      for (let i = 0; i < count; i++)
        all.push(
          started(await startSidecar(config, { name: `${name}-${i}` }), (s) => s.program.stop()),
        );
      return all;
    },
    authStack: async (options) => started(await startStack(options), (s) => s.stop()),
    async upstream(handler) {
      const server = http.createServer(handler);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as AddressInfo).port;
      return started({ server, port, url: `http://127.0.0.1:${port}` }, ({ server: s }) => {
        s.closeAllConnections();
        return new Promise((resolve) => s.close(resolve));
      });
    },
    defer(teardown) {
      teardowns.push(teardown);
    },
    async stopAll() {
      const errors: unknown[] = [];
      for (const teardown of teardowns.splice(0).reverse()) {
        try {
          await teardown();
        } catch (err) {
          errors.push(err);
        }
      }
      if (errors.length > 0) throw new AggregateError(errors, 'stopping the stack failed');
    },
  };
}

/**
 * The file-scoped stacks. `redis` and `userService` are the plain ones most files share;
 * `redisAdmin` is a client on `redis` for reading what the sidecars stored; `redisCluster` is a
 * three-shard Redis Cluster, with clients and the slot map beside it.
 */
export const test = base
  // vitest reads a fixture's dependencies from the destructuring of its first parameter: `start` has none.
  .extend('start', { scope: 'file' }, ({}, { onCleanup }) => {
    const start = starter();
    onCleanup(() => start.stopAll());
    return start;
  })
  .extend('redis', { scope: 'file' }, ({ start }) => start.redis())
  .extend('redisAdmin', { scope: 'file' }, ({ start, redis }) => start.redisClient(redis.url))
  .extend('redisCluster', { scope: 'file' }, ({ start }) => start.redisCluster(3))
  /** An ioredis Cluster client on `redisCluster`. */
  .extend('redisClusterClient', { scope: 'file' }, ({ start, redisCluster }) =>
    start.redisClusterClient(redisCluster),
  )
  /** One plain client per node of `redisCluster`, in its order (for per-shard counters). */
  .extend('redisClusterNodes', { scope: 'file' }, ({ start, redisCluster }) =>
    redisCluster.nodes.map((n) => start.redisClient(n.url)),
  )
  /** The index in redisClusterNodes of the shard owning each of the 16,384 slots. */
  .extend('slotOwner', { scope: 'file' }, async ({ redisCluster, redisClusterNodes }) => {
    const owner = new Map<number, number>();
    const slots = (await redisClusterNodes[0]?.call('CLUSTER', 'SLOTS')) as [
      number,
      number,
      [string, number],
    ][];
    for (const [from, to, [, port]] of slots) {
      const shard = redisCluster.nodes.findIndex((n) => n.port === port);
      for (let s = from; s <= to; s++) owner.set(s, shard);
    }
    return owner;
  })
  .extend('userService', { scope: 'file' }, ({ start }) => start.userService());

/**
 * For a describe block whose stack is its own (describe.each over the stores, or several describes
 * each with other settings): `setup` runs before the block's first test and everything it starts
 * stops after its last. The returned object stands for what setup returned, read when a test runs:
 *
 *   const stack = perDescribe((start) => start.authStack({ redisUrl }));
 *   it('...', async () => { await fetch(`${stack.issuer}/jwks.json`); });
 */
export function perDescribe<T extends object>(setup: (start: Starter) => Promise<T>): T {
  const start = starter();
  let value: T | undefined;
  beforeAll(async () => {
    value = await setup(start);
  });
  afterAll(() => start.stopAll());
  return standIn(() => {
    if (value === undefined)
      throw new Error(
        'the stack of this describe block is not running (read only inside tests and hooks)',
      );
    return value;
  });
}

/** An object that stands for current()'s value, read each time a property is (so it may be declared before the value exists). */
export function standIn<T extends object>(current: () => T): T {
  return new Proxy({} as T, {
    get: (_, key) => {
      const target = current();
      const v: unknown = Reflect.get(target, key);
      // Methods run on the value itself (a client's private state is not on this stand-in).
      return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v;
    },
    has: (_, key) => Reflect.has(current(), key),
    ownKeys: () => Reflect.ownKeys(current()),
    getOwnPropertyDescriptor: (_, key) => Reflect.getOwnPropertyDescriptor(current(), key),
  });
}

export interface StackOnStore {
  readonly stack: () => Stack;
  /** The Redis URL (store redis only). */
  readonly redisUrl: () => string;
}

/**
 * The sign-in stack for the calling describe block (perDescribe) on the memory store or on a
 * redis-server started with the chart's own arguments.
 */
export function stackOn(
  store: 'memory' | 'redis',
  options: Omit<StackOptions, 'redisUrl'> = {},
): StackOnStore {
  const running = perDescribe(async (start) => {
    // The chart's arguments require a password (--requirepass from its generated Secret): one here too.
    const password = 'auth-stack-redis-password';
    const redis =
      store === 'redis'
        ? await start.redis(chartRedisArgs('auth-redis', { REDIS_PASSWORD: password }), {
            password,
          })
        : undefined;
    return {
      redis,
      stack: await start.authStack({
        ...options,
        ...(redis !== undefined ? { redisUrl: redis.url } : {}),
      }),
    };
  });
  return {
    stack: () => running.stack,
    redisUrl: () => {
      if (running.redis === undefined) throw new Error('this stack runs without Redis');
      return running.redis.url;
    },
  };
}
