// Sign-in throttling per username and per client address, on the sidecar's token-bucket module and
// stores (memory or Redis, the same BucketStore port). Attempt budgets are "N per minute with a
// burst of B": with the bucket's integer tokens-per-second rate, one attempt costs 60 tokens, the
// bucket holds B * 60 and refills N tokens per second (= N attempts per minute).
// Failure policy: when the store cannot answer, sign-in is allowed (fail open) and a warning is
// logged, because a Redis outage must not lock every user out; the password check still applies.
import type { BucketRule } from '../../sidecar/bucket.ts';
import type { BucketStore } from '../../sidecar/stores/bucket-store.ts';

export interface ThrottleLimits {
  readonly perUsername: { readonly burst: number; readonly perMinute: number };
  readonly perAddress: { readonly burst: number; readonly perMinute: number };
}

export interface ThrottleDecision {
  readonly allowed: boolean;
  /** Seconds until another attempt is allowed (when limited). */
  readonly retryAfterSeconds: number;
}

export interface SignInThrottle {
  attempt(username: string, address: string): Promise<ThrottleDecision>;
}

const COST = 60;

export function ruleFor(limit: { burst: number; perMinute: number }): BucketRule {
  return { replenishRate: limit.perMinute, burstCapacity: limit.burst * COST, requestedTokens: COST };
}

export function createSignInThrottle(store: BucketStore, limits: ThrottleLimits, onStoreError: (err: unknown) => void): SignInThrottle {
  const userRule = ruleFor(limits.perUsername);
  const addressRule = ruleFor(limits.perAddress);
  return {
    async attempt(username, address) {
      try {
        // Both buckets are charged on every attempt, so guessing across many usernames from one
        // address and from many addresses against one username are both bounded.
        const [byUser, byAddress] = await Promise.all([
          store.take(`signin:user:${username.toLowerCase()}`, userRule),
          store.take(`signin:addr:${address}`, addressRule),
        ]);
        if (byUser.allowed && byAddress.allowed) return { allowed: true, retryAfterSeconds: 0 };
        const waitMs = Math.max(byUser.allowed ? 0 : byUser.retryAfterMs, byAddress.allowed ? 0 : byAddress.retryAfterMs);
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
      } catch (err) {
        onStoreError(err);
        return { allowed: true, retryAfterSeconds: 0 };
      }
    },
  };
}
