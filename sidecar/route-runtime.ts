// Everything the proxy needs for one config, built once per (re)load and swapped atomically:
// requests keep the runtime they started with, so a reload never changes a request midway.
import type { Pool } from 'undici';
import { bucketTtlMs, type BucketRule } from '../lib/token-bucket/bucket.ts';
import type { LimiterConfig, SidecarConfig } from '../lib/config/sidecar.ts';
import type { JwtKeySource } from './jwt-key.ts';
import type { RouteMetrics, RuleMetrics } from './metrics.ts';
import type { PathSettings } from '../lib/web/canonical-target.ts';
import { compilePathPattern, type PathMatcher } from './path-pattern.ts';
import { keyInFlightBound } from './key-in-flight.ts';
import { keyLookAlikes } from './request-head.ts';
import { composeHeaderSets, type HeaderSet } from './rate-limit-headers.ts';
import type { BucketStore } from '../lib/token-bucket/bucket-store.ts';

/** Name of the one rule of the single-limit form. */
export const DEFAULT_RULE = 'default';

/** One rule of the route, ready for the hot path. */
export interface RuleRuntime {
  readonly name: string;
  /** undefined: every path. */
  readonly matchPath: PathMatcher | undefined;
  /** undefined: every method. */
  readonly methods: ReadonlySet<string> | undefined;
  readonly limits: readonly BucketRule[];
  /** Each limit's requestedTokens, made once for the store's take. */
  readonly costs: readonly number[];
  /**
   * Bucket keys are `<route id>:<rule>:<user id>`, so two routes or two rules never share a
   * bucket; the single-limit form keeps `<route id>:<user id>`.
   */
  readonly bucketPrefix: string;
  /** false: shadow mode (decide, count, add headers, never refuse). */
  readonly enforce: boolean;
  /** Appends the rule's enabled rate-limit headers for one decision. */
  readonly rateHeaders: HeaderSet;
  readonly metrics: RuleMetrics;
}

export interface RouteRuntime {
  readonly config: SidecarConfig;
  readonly routeId: string;
  readonly match: PathMatcher;
  /** How the request path is made canonical before matching (lib/web/canonical-target.ts). */
  readonly paths: PathSettings;
  /** In order; the first match decides. */
  readonly rules: readonly RuleRuntime[];
  /** What a request no rule matches gets. */
  readonly unmatched: 'forward' | 'refuse';
  /** Lower-case name of the key header (jwt: the header set from the verified claim). */
  readonly keyHeader: string;
  /** Other spellings of keyHeader a CGI/WSGI upstream reads as it (request-head.ts keyLookAlikes). */
  readonly keyLookAlikes: readonly string[];
  /** Set when the key is a claim of a verified access token. */
  readonly jwt: JwtKeySource | undefined;
  readonly missingKeyStatus: number;
  readonly onStoreError: 'allow' | 'deny';
  /** Requests one key may have in flight (key-in-flight.ts; 0 = no bound). */
  readonly maxInFlightPerKey: number;
  readonly store: BucketStore;
  readonly upstream: Pool;
  readonly metrics: RouteMetrics;
}

/** The limiter's rules, the single-limit form being one rule for every path. */
export function limiterRules(limiter: LimiterConfig): NonNullable<LimiterConfig['rules']> {
  if (limiter.rules !== undefined) return limiter.rules;
  return [
    {
      name: DEFAULT_RULE,
      path: '/**',
      limits: [
        {
          replenishRate: limiter.replenishRate as number,
          burstCapacity: limiter.burstCapacity as number,
          requestedTokens: limiter.requestedTokens ?? 1,
        },
      ],
    },
  ];
}

/**
 * The policy name clients see in RateLimit-Policy: `default` for the single-limit form, `rule<n>`
 * for the n-th rule (from 1). Never the route's or a rule's name, which are the team's
 * internals (and, with a shared Redis, once told an attacker which buckets to aim at).
 */
export function policyName(single: boolean, index: number): string {
  return single ? DEFAULT_RULE : `rule${index + 1}`;
}

/** A rule's methods; HEAD goes with GET, since a server answers HEAD by running its GET handler (RFC 9110 section 9.3.2). */
function ruleMethods(methods: readonly string[] | undefined): ReadonlySet<string> | undefined {
  if (methods === undefined) return undefined;
  const set = new Set(methods);
  if (set.has('GET')) set.add('HEAD');
  return set;
}

export function buildRouteRuntime(
  config: SidecarConfig,
  store: BucketStore,
  upstream: Pool,
  metrics: RouteMetrics,
  jwt?: JwtKeySource,
): RouteRuntime {
  const { limiter, route } = config;
  const single = limiter.rules === undefined;
  const rules = limiterRules(limiter).map((r, index): RuleRuntime => {
    const limits = r.limits.map((l): BucketRule => ({
      replenishRate: l.replenishRate,
      burstCapacity: l.burstCapacity,
      requestedTokens: l.requestedTokens,
    }));
    const enforce = r.enforce ?? limiter.enforce;
    return {
      name: r.name,
      matchPath:
        r.path === '/**' ? undefined : compilePathPattern(r.path, route.caseInsensitivePaths),
      methods: ruleMethods(r.methods),
      limits,
      costs: limits.map((l) => l.requestedTokens),
      bucketPrefix: single ? `${route.id}:` : `${route.id}:${r.name}:`,
      enforce,
      rateHeaders: composeHeaderSets(limiter.headers, {
        policyName: policyName(single, index),
        limits,
      }),
      metrics: metrics.forRule(r.name, !enforce),
    };
  });
  return {
    config,
    routeId: route.id,
    match: compilePathPattern(route.path, route.caseInsensitivePaths),
    paths: { mergeSlashes: route.mergeSlashes },
    rules,
    unmatched: limiter.unmatched,
    keyHeader: limiter.keyHeader.toLowerCase(),
    keyLookAlikes: keyLookAlikes(limiter.keyHeader.toLowerCase()),
    jwt,
    missingKeyStatus: limiter.onMissingKey.status,
    onStoreError: limiter.onStoreError,
    // Decision mode forwards no bodies: nothing for one key to hold.
    maxInFlightPerKey:
      config.upstream === undefined
        ? 0
        : keyInFlightBound(limiter.maxInFlightPerKey, config.upstream.connections),
    store,
    upstream,
    metrics,
  };
}

/** The first rule matching `method` and `path` (no query), or undefined. */
export function selectRule(
  rt: RouteRuntime,
  method: string,
  path: string,
): RuleRuntime | undefined {
  const rules = rt.rules;
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i] as RuleRuntime;
    if (r.methods !== undefined && !r.methods.has(method)) continue;
    if (r.matchPath !== undefined && !r.matchPath(path)) continue;
    return r;
  }
  return undefined;
}

/**
 * The rules of `next` that keep their buckets from `old` (same bucket prefix) with limits whose
 * key TTL grew (a lower rate or a larger burst): a key written under the old limits would expire,
 * and read as full, before the new limits refill it. Each with the new TTL of every bucket, ms.
 */
export function lengthenedTtls(
  old: RouteRuntime,
  next: RouteRuntime,
): { readonly bucketPrefix: string; readonly ttlsMs: number[] }[] {
  const out: { bucketPrefix: string; ttlsMs: number[] }[] = [];
  for (const rule of next.rules) {
    const before = old.rules.find((r) => r.bucketPrefix === rule.bucketPrefix);
    if (before === undefined) continue;
    const ttlsMs = rule.limits.map(bucketTtlMs);
    const oldTtls = before.limits.map(bucketTtlMs);
    if (ttlsMs.some((ttl, i) => i < oldTtls.length && ttl > (oldTtls[i] as number)))
      out.push({ bucketPrefix: rule.bucketPrefix, ttlsMs });
  }
  return out;
}
