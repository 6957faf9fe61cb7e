// Rate-limit response header sets (DESIGN.md section 3), a registry selected per route. All
// counts are tokens; times are whole seconds rounded up.
import type { BucketRule, Decision } from './bucket.ts';

export interface HeaderContext {
  readonly routeId: string;
  readonly rule: BucketRule;
}

/** Appends [name, value] pairs to `out` for one decision. */
export type HeaderSet = (decision: Decision, ctx: HeaderContext, out: string[]) => void;

const seconds = (ms: number) => String(Math.ceil(ms / 1000));

export const headerSets = {
  /** The specification's RateLimit-Limit, -Remaining, -Reset, -Used (SPEC 8.2). */
  spec: (d, _ctx, out) => {
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
  draft: (d, ctx, out) => {
    const name = JSON.stringify(ctx.routeId);
    const window = Math.ceil(ctx.rule.burstCapacity / ctx.rule.replenishRate);
    out.push(
      'ratelimit-policy', `${name};q=${d.limit};w=${window}`,
      'ratelimit', `${name};r=${d.remaining};t=${seconds(d.resetMs)}`,
    );
  },
  /** Spring Cloud Gateway's RedisRateLimiter headers, for clients of that gateway. */
  spring: (d, ctx, out) => {
    out.push(
      'x-ratelimit-remaining', String(d.remaining),
      'x-ratelimit-replenish-rate', String(ctx.rule.replenishRate),
      'x-ratelimit-burst-capacity', String(ctx.rule.burstCapacity),
      'x-ratelimit-requested-tokens', String(ctx.rule.requestedTokens),
    );
  },
} satisfies Record<string, HeaderSet>;

export type HeaderSetName = keyof typeof headerSets;

/** One function writing every enabled set, chosen once per config. */
export function composeHeaderSets(enabled: Readonly<Record<HeaderSetName, boolean>>): HeaderSet {
  const sets = (Object.keys(headerSets) as HeaderSetName[]).filter((n) => enabled[n]).map((n) => headerSets[n]);
  return (d, ctx, out) => {
    for (const set of sets) set(d, ctx, out);
  };
}
