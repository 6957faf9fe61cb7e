// Everything the proxy needs for one config, built once per (re)load and swapped atomically:
// requests keep the runtime they started with, so a reload never changes a request midway.
import type { Pool } from 'undici';
import type { BucketRule } from './bucket.ts';
import type { SidecarConfig } from './config.ts';
import type { RouteMetrics } from './metrics.ts';
import { compilePathPattern, type PathMatcher } from './path-pattern.ts';
import { composeHeaderSets, type HeaderSet } from './rate-limit-headers.ts';
import type { BucketStore } from './stores/bucket-store.ts';

export interface RouteRuntime {
  readonly config: SidecarConfig;
  readonly routeId: string;
  /** Bucket keys are `<route id>:<user id>`, so two routes never share a bucket. */
  readonly bucketPrefix: string;
  readonly match: PathMatcher;
  readonly rule: BucketRule;
  /** Lower-case name of the key header. */
  readonly keyHeader: string;
  readonly missingKeyStatus: number;
  readonly onStoreError: 'allow' | 'deny';
  /** Appends the route's enabled rate-limit headers for one decision. */
  readonly rateHeaders: HeaderSet;
  readonly store: BucketStore;
  readonly upstream: Pool;
  readonly metrics: RouteMetrics;
}

export function buildRouteRuntime(config: SidecarConfig, store: BucketStore, upstream: Pool, metrics: RouteMetrics): RouteRuntime {
  const { limiter, route } = config;
  const rule: BucketRule = {
    replenishRate: limiter.replenishRate,
    burstCapacity: limiter.burstCapacity,
    requestedTokens: limiter.requestedTokens,
  };
  return {
    config,
    routeId: route.id,
    bucketPrefix: `${route.id}:`,
    match: compilePathPattern(route.path),
    rule,
    keyHeader: limiter.keyHeader.toLowerCase(),
    missingKeyStatus: limiter.onMissingKey.status,
    onStoreError: limiter.onStoreError,
    rateHeaders: composeHeaderSets(limiter.headers, { routeId: route.id, rule }),
    store,
    upstream,
    metrics,
  };
}
