// Rate-limit response header sets, a registry selected per route. All counts are tokens; times
// are whole seconds rounded up. Each set is made once per rule and config, so what does not depend
// on the decision (the policies, their names, the limits' numbers) is rendered once, not for every
// response. With several limits on a rule, the single-policy sets (fields, spring) describe the
// most constraining bucket (the decision's own fields) and the draft set lists every policy.
import type { BucketRule, Decision } from '../lib/token-bucket/bucket.ts';

export interface HeaderContext {
  /** Policy name as clients see it (route-runtime.ts policyName): never the route's or rule's name. */
  readonly policyName: string;
  /** The rule's limits (one or more), in order. */
  readonly limits: readonly BucketRule[];
}

/** Index of the limit the request's decision comes from (bucket.ts combineDecisions). */
function decidingLimit(d: Decision): number {
  const all = d.limits;
  if (all === undefined) return 0;
  for (let i = 0; i < all.length; i++) {
    const l = all[i] as Decision;
    if (
      l.remaining === d.remaining &&
      l.limit === d.limit &&
      l.cost === d.cost &&
      l.retryAfterMs === d.retryAfterMs &&
      l.resetMs === d.resetMs
    )
      return i;
  }
  return 0;
}

/** Appends [name, value] pairs to `out` for one decision. */
export type HeaderSet = (decision: Decision, out: string[]) => void;

const seconds = (ms: number) => String(Math.ceil(ms / 1000));

export const headerSets = {
  /** RateLimit-Limit, -Remaining, -Reset, -Used, one header each. */
  fields: (): HeaderSet => (d, out) => {
    out.push(
      'ratelimit-limit',
      String(d.limit),
      'ratelimit-remaining',
      String(d.remaining),
      'ratelimit-reset',
      seconds(d.resetMs),
      'ratelimit-used',
      String(d.limit - d.remaining),
    );
  },
  /**
   * IETF httpapi draft-ietf-httpapi-ratelimit-headers-10: the policy (q = burst capacity in
   * tokens, w = seconds an empty bucket takes to fill) and the current state (r = tokens left,
   * t = seconds until full).
   */
  draft: (ctx: HeaderContext): HeaderSet => {
    const several = ctx.limits.length > 1;
    const names = ctx.limits.map((_, i) =>
      JSON.stringify(several ? `${ctx.policyName}/${i}` : ctx.policyName),
    );
    const policy = ctx.limits
      .map(
        (l, i) =>
          `${names[i] as string};q=${l.burstCapacity};w=${Math.ceil(l.burstCapacity / l.replenishRate)}`,
      )
      .join(', ');
    if (!several) {
      const state = `${names[0] as string};r=`;
      return (d, out) => {
        out.push(
          'ratelimit-policy',
          policy,
          'ratelimit',
          `${state}${d.remaining};t=${seconds(d.resetMs)}`,
        );
      };
    }
    return (d, out) => {
      const each = d.limits ?? [d];
      let state = '';
      for (let i = 0; i < each.length; i++) {
        const l = each[i] as Decision;
        state += `${i === 0 ? '' : ', '}${names[i] as string};r=${l.remaining};t=${seconds(l.resetMs)}`;
      }
      out.push('ratelimit-policy', policy, 'ratelimit', state);
    };
  },
  /** Spring Cloud Gateway's RedisRateLimiter headers, for clients of that gateway. */
  spring: (ctx: HeaderContext): HeaderSet => {
    const rates = ctx.limits.map((l) => String(l.replenishRate));
    const bursts = ctx.limits.map((l) => String(l.burstCapacity));
    const requested = ctx.limits.map((l) => String(l.requestedTokens));
    return (d, out) => {
      const i = decidingLimit(d);
      out.push(
        'x-ratelimit-remaining',
        String(d.remaining),
        'x-ratelimit-replenish-rate',
        rates[i] as string,
        'x-ratelimit-burst-capacity',
        bursts[i] as string,
        'x-ratelimit-requested-tokens',
        requested[i] as string,
      );
    };
  },
} satisfies Record<string, (ctx: HeaderContext) => HeaderSet>;

export type HeaderSetName = keyof typeof headerSets;

/** One function writing every enabled set for one rule, made once per config. */
export function composeHeaderSets(
  enabled: Readonly<Record<HeaderSetName, boolean>>,
  ctx: HeaderContext,
): HeaderSet {
  const sets = (Object.keys(headerSets) as HeaderSetName[])
    .filter((n) => enabled[n])
    .map((n) => headerSets[n](ctx));
  return (d, out) => {
    for (const set of sets) set(d, out);
  };
}
