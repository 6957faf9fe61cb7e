// Rate-limit response header sets (DESIGN.md section 3), a registry selected per route. All
// counts are tokens; times are whole seconds rounded up. Each set is made once per config, so what
// does not depend on the decision (the policy, the route's name, the rule's numbers) is rendered
// once, not for every response.
import type { BucketRule, Decision } from './bucket.ts';

export interface HeaderContext {
  readonly routeId: string;
  readonly rule: BucketRule;
}

/** Appends [name, value] pairs to `out` for one decision. */
export type HeaderSet = (decision: Decision, out: string[]) => void;

const seconds = (ms: number) => String(Math.ceil(ms / 1000));

export const headerSets = {
  /** The specification's RateLimit-Limit, -Remaining, -Reset, -Used (SPEC 8.2). */
  spec: (): HeaderSet => (d, out) => {
    out.push(
      'ratelimit-limit', String(d.limit),
      'ratelimit-remaining', String(d.remaining),
      'ratelimit-reset', seconds(d.resetMs),
      'ratelimit-used', String(d.limit - d.remaining),
    );
  },
  /**
   * IETF httpapi draft-ietf-httpapi-ratelimit-headers-10: the policy (q = burst capacity in
   * tokens, w = seconds an empty bucket takes to fill) and the current state (r = tokens left,
   * t = seconds until full).
   */
  draft: (ctx: HeaderContext): HeaderSet => {
    const name = JSON.stringify(ctx.routeId);
    const window = Math.ceil(ctx.rule.burstCapacity / ctx.rule.replenishRate);
    // A decision's limit is its rule's burst capacity (bucket.ts toDecision).
    const policy = `${name};q=${ctx.rule.burstCapacity};w=${window}`;
    const state = `${name};r=`;
    return (d, out) => {
      out.push('ratelimit-policy', policy, 'ratelimit', `${state}${d.remaining};t=${seconds(d.resetMs)}`);
    };
  },
  /** Spring Cloud Gateway's RedisRateLimiter headers, for clients of that gateway. */
  spring: (ctx: HeaderContext): HeaderSet => {
    const rate = String(ctx.rule.replenishRate);
    const burst = String(ctx.rule.burstCapacity);
    const requested = String(ctx.rule.requestedTokens);
    return (d, out) => {
      out.push(
        'x-ratelimit-remaining', String(d.remaining),
        'x-ratelimit-replenish-rate', rate,
        'x-ratelimit-burst-capacity', burst,
        'x-ratelimit-requested-tokens', requested,
      );
    };
  },
} satisfies Record<string, (ctx: HeaderContext) => HeaderSet>;

export type HeaderSetName = keyof typeof headerSets;

/** One function writing every enabled set for one route and rule, made once per config. */
export function composeHeaderSets(enabled: Readonly<Record<HeaderSetName, boolean>>, ctx: HeaderContext): HeaderSet {
  const sets = (Object.keys(headerSets) as HeaderSetName[]).filter((n) => enabled[n]).map((n) => headerSets[n](ctx));
  return (d, out) => {
    for (const set of sets) set(d, out);
  };
}
