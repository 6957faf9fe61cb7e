// Failed client authentications per (client_id, client address; IPv6 per /64), a token bucket of
// failures: a burst of B wrong secrets, then one more every R s. While a pair's budget is empty
// the endpoints refuse it without checking the secret. Successful authentications take nothing
// and cost one Map lookup. Only registered clients are counted, so made-up client ids cannot fill
// the table.
//
// The state is in process memory, per replica: with N replicas a guesser gets up to N budgets,
// which is still a handful of guesses per refill against 256-bit secrets (docs/adr/0003). The
// table is bounded (least recently failed pair dropped first); dropping a pair only gives that
// pair a fresh burst, and pushing one out takes maxEntries failing pairs.
import { take, type BucketRule, type BucketState } from '../../lib/token-bucket/bucket.ts';
import { addressKey } from './throttle.ts';

export interface ClientAuthLimits {
  /** Failures allowed in a row before the pair is refused. */
  readonly burst: number;
  /** One failure regained every this many seconds (integer). */
  readonly refillSeconds: number;
  /** Most pairs remembered at once. */
  readonly maxEntries: number;
}

export type ClientAuthCheck =
  { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

export interface ClientAuthThrottle {
  /** Before the secret is checked: refused while the pair's failure budget is empty. */
  check(clientId: string, address: string): ClientAuthCheck;
  /** After a wrong secret: takes one failure; true when this emptied the budget (a new lockout). */
  failed(clientId: string, address: string): boolean;
}

export const defaultClientAuthLimits: ClientAuthLimits = {
  burst: 10,
  refillSeconds: 6,
  maxEntries: 10_000,
};

export function createClientAuthThrottle(
  limits: ClientAuthLimits,
  now: () => number,
): ClientAuthThrottle {
  // The bucket's rate is whole tokens per second: one failure costs refillSeconds tokens at 1 token/s.
  const rule: BucketRule = {
    replenishRate: 1,
    burstCapacity: limits.burst * limits.refillSeconds,
    requestedTokens: limits.refillSeconds,
  };
  const pairs = new Map<string, BucketState>();
  // Client ids are unreserved URI characters, so a newline cannot occur in one.
  const keyOf = (clientId: string, address: string) => `${clientId}\n${addressKey(address)}`;
  return {
    check(clientId, address) {
      const key = keyOf(clientId, address);
      const state = pairs.get(key);
      if (state === undefined) return { allowed: true };
      const at = now();
      const { decision } = take(state, rule, at);
      if (!decision.allowed)
        return {
          allowed: false,
          retryAfterSeconds: Math.max(1, Math.ceil(decision.retryAfterMs / 1000)),
        };
      // Refilled completely (a zero-cost look): nothing left to remember.
      if (take(state, rule, at, 0).decision.resetMs === 0) pairs.delete(key);
      return { allowed: true };
    },
    failed(clientId, address) {
      const key = keyOf(clientId, address);
      const at = now();
      const { state } = take(pairs.get(key), rule, at);
      pairs.delete(key); // re-inserted last: the Map's order is least recently failed first
      pairs.set(key, state);
      if (pairs.size > limits.maxEntries) {
        const oldest = pairs.keys().next();
        if (oldest.done !== true) pairs.delete(oldest.value);
      }
      return !take(state, rule, at).decision.allowed;
    },
  };
}
