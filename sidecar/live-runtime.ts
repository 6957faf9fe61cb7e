// The running RouteRuntime of one sidecar process, proxy or decision service alike: built from
// the config, swapped atomically on reload (new requests see the new config, those under way
// finish with the one they started with), its store reconnected when the Redis settings or the
// files they name change, and stored buckets kept exact when a reload makes a rule refill more
// slowly. One reload at a time: each sees the result of the one before.
import type { Logger } from 'pino';
import type { Pool } from 'undici';
import {
  deprecatedOptions,
  parseSidecarConfigText,
  type SidecarConfig,
} from '../lib/config/sidecar.ts';
import type { BucketStore } from '../lib/token-bucket/bucket-store.ts';
import { createBucketStore } from './create-store.ts';
import { JwtKeySource } from './jwt-key.ts';
import type { SidecarMetrics } from './metrics.ts';
import { resolveRedisConfig } from './redis-url-file.ts';
import { buildRouteRuntime, lengthenedTtls, type RouteRuntime } from './route-runtime.ts';

export interface LiveRuntimeDeps {
  /** The config at start, `override` applied. */
  readonly initial: SidecarConfig;
  /** Applied to every reloaded config, e.g. ports from the environment. */
  readonly override: (config: SidecarConfig) => SidecarConfig;
  readonly logger: Logger;
  /** Wall clock in ms for the memory store (the Redis store uses Redis TIME). */
  readonly now: () => number;
  readonly metrics: SidecarMetrics;
  /** The upstream pool for `config`: the running runtime's when it still fits, else a new one (the old one is then closed). */
  readonly upstream: (config: SidecarConfig, running: RouteRuntime | undefined) => Pool;
  /** Settings read once at start: a reload changing one is logged and keeps the running value. */
  readonly restartFields: readonly (keyof SidecarConfig)[];
}

export interface LiveRuntime {
  current(): RouteRuntime;
  /** Resolves when the store answers (or after timeoutMs); false when it did not. */
  storeReady(timeoutMs: number): Promise<boolean>;
  /** Validates and applies new config text; an invalid one is logged and the old config kept. */
  reloadText(text: string): Promise<boolean>;
  /**
   * Re-reads the files the running config names (`redis.urlFile`) and reconnects the store when
   * the URL changed; an unreadable or invalid file is logged and the running store kept.
   */
  refreshFiles(): Promise<boolean>;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The jwt key source of `config`: the running one (and its caches) when its settings did not change. */
export function jwtKeySource(
  config: SidecarConfig,
  running: JwtKeySource | undefined,
): JwtKeySource | undefined {
  const settings = config.limiter.jwt;
  if (config.limiter.key !== 'jwt' || settings === undefined) return undefined;
  return running !== undefined && same(running.config, settings)
    ? running
    : new JwtKeySource(settings);
}

/** Resolves true once the store answers, false after timeoutMs. */
export async function readyWithin(store: BucketStore, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const ok = await Promise.race([store.ready().then(() => true), timeout]);
  clearTimeout(timer);
  return ok;
}

export function buildLiveRuntime(deps: LiveRuntimeDeps): LiveRuntime {
  const { initial, override, logger: log, metrics } = deps;
  for (const message of deprecatedOptions(initial)) log.warn(message);
  // The redis settings the current store was built from, urlFile resolved to the URL it held.
  let storeRedis = resolveRedisConfig(initial.redis);
  const storeHooks = {
    onRefusedLocally: () => metrics.localRefusals.inc(),
    onEvicted: (count: number) => metrics.storeEvictions.inc(count),
    onRefusedFull: () => metrics.storeFullRefusals.inc(),
  };
  // memory.* is read once: a new memory store would forget every bucket (and admit their users afresh).
  const first = createBucketStore(storeRedis, initial.memory, deps.now, storeHooks);
  let storeKind = first.kind;
  let runtime = buildRouteRuntime(
    initial,
    first.store,
    deps.upstream(initial, undefined),
    metrics.forRoute(initial.route.id, first.kind),
    jwtKeySource(initial, undefined),
  );

  /**
   * Limits that refill more slowly now keep the buckets' state: keys written under the old limits
   * get the new limits' TTL, so none expires (and reads as full) before it would have refilled.
   */
  const retainBuckets = (old: RouteRuntime, next: RouteRuntime): void => {
    const store = next.store;
    if (store.retain === undefined) return;
    for (const { bucketPrefix, ttlsMs } of lengthenedTtls(old, next)) {
      store.retain(bucketPrefix, ttlsMs).then(
        (keys) =>
          log.info(
            { route: next.routeId, bucketPrefix, keys, ttlsMs },
            'limits changed: stored buckets keep their state for the new limits',
          ),
        (err: unknown) =>
          log.warn(
            { route: next.routeId, bucketPrefix, err: (err as Error).message },
            "limits changed: could not lengthen the stored buckets' TTL",
          ),
      );
    }
  };

  /** Applies `config`, or re-applies the running one (re-reading the files it names). */
  const applyNow = async (config: SidecarConfig | undefined): Promise<void> => {
    const next = override(config ?? runtime.config);
    if (config !== undefined) for (const message of deprecatedOptions(next)) log.warn(message);
    let store = runtime.store;
    let kind = storeKind;
    const nextRedis = resolveRedisConfig(next.redis);
    if (!same(nextRedis, storeRedis)) {
      const created = createBucketStore(nextRedis, initial.memory, deps.now, storeHooks);
      // Switch once the new store answers (at most its connect timeout), so that new requests
      // are not refused by onStoreError while it connects; the old store serves until then.
      const connected = await readyWithin(created.store, nextRedis?.connectTimeoutMs ?? 0);
      store = created.store;
      kind = created.kind;
      log.info(
        { store: kind, connected },
        'store settings changed: new requests use a new store connection',
      );
    }
    const old = runtime;
    for (const field of deps.restartFields) {
      if (!same(next[field], old.config[field]))
        log.warn(
          { field },
          `config: a changed ${field} setting needs a restart; keeping the old one`,
        );
    }
    const pool = deps.upstream(next, old);
    runtime = buildRouteRuntime(
      next,
      store,
      pool,
      metrics.forRoute(next.route.id, kind),
      jwtKeySource(next, old.jwt),
    );
    storeKind = kind;
    storeRedis = nextRedis;
    log.level = next.logLevel;
    // Requests that started on the old runtime still hold it; close gracefully behind them.
    void Promise.allSettled([
      store === old.store ? undefined : old.store.close(),
      pool === old.upstream ? undefined : old.upstream.close(),
    ]);
    if (store === old.store) retainBuckets(old, runtime);
  };
  let applying: Promise<unknown> = Promise.resolve();
  const apply = (config: SidecarConfig | undefined): Promise<void> => {
    const done = applying.then(() => applyNow(config));
    applying = done.catch(() => undefined);
    return done;
  };

  return {
    current: () => runtime,
    storeReady: (timeoutMs) => readyWithin(runtime.store, timeoutMs),
    async reloadText(text) {
      let config: SidecarConfig;
      try {
        config = parseSidecarConfigText(text);
      } catch (err) {
        metrics.reloads.labels('invalid').inc();
        log.error(
          { err: (err as Error).message },
          'config reload rejected; keeping the running config',
        );
        return false;
      }
      try {
        await apply(config);
      } catch (err) {
        metrics.reloads.labels('failed').inc();
        log.error(
          { err: (err as Error).message },
          'config reload failed; keeping the running config',
        );
        return false;
      }
      metrics.reloads.labels('applied').inc();
      const l = runtime.config.limiter;
      log.info(
        {
          route: runtime.routeId,
          path: runtime.config.route.path,
          key: l.key,
          rules: runtime.rules.map((r) => ({ name: r.name, limits: r.limits, enforce: r.enforce })),
        },
        'config reloaded',
      );
      return true;
    },
    async refreshFiles() {
      try {
        await apply(undefined);
      } catch (err) {
        metrics.reloads.labels('failed').inc();
        log.error(
          { err: (err as Error).message },
          'redis.urlFile unreadable or invalid; keeping the running store',
        );
        return false;
      }
      return true;
    },
  };
}
