// Sign-in throttling, on the token-bucket module and stores the sidecar uses (memory or Redis, the
// same BucketStore port). Three budgets, each "N per minute with a burst of B" (one attempt costs
// 60 tokens, the bucket holds B * 60 and refills N tokens per second = N attempts per minute):
// - per username and client address (tight): guessing one account from one place;
// - per client address: guessing across many accounts from one place;
// - per username (looser, and charged only when the first two allow the attempt): guessing one
//   account from many places. A single address cannot exhaust it, so someone hammering an
//   account from one address locks out only that address, never the owner elsewhere.
// IPv6 clients are keyed per /64, the block one subscriber usually holds.
// When the store cannot answer, the attempt is refused (fail closed, StoreUnavailable): a sign-in
// could not complete without the store anyway, and an unthrottled password check would be an
// oracle for guessing while the store is down or full.
import { isIPv4, isIPv6 } from 'node:net';
import type { BucketRule } from '../../lib/token-bucket/bucket.ts';
import type { BucketStore } from '../../lib/token-bucket/bucket-store.ts';
import { takeOne } from '../../lib/token-bucket/take-promise.ts';

export interface Budget {
  readonly burst: number;
  readonly perMinute: number;
}

export interface ThrottleLimits {
  readonly perUsernameAndAddress: Budget;
  readonly perUsername: Budget;
  readonly perAddress: Budget;
}

export interface ThrottleDecision {
  readonly allowed: boolean;
  /** Seconds until another attempt is allowed (when limited). */
  readonly retryAfterSeconds: number;
}

export interface SignInThrottle {
  attempt(username: string, address: string): Promise<ThrottleDecision>;
}

/** The throttle's store failed; the attempt is refused. */
export class StoreUnavailable extends Error {
  constructor(cause: unknown) {
    super('the sign-in throttle store is unavailable', { cause });
    this.name = 'StoreUnavailable';
  }
}

const COST = 60;

export function ruleFor(limit: Budget): BucketRule {
  return {
    replenishRate: limit.perMinute,
    burstCapacity: limit.burst * COST,
    requestedTokens: COST,
  };
}

/** The throttle key of a client address: IPv4 as is, IPv6 by its /64 prefix. */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1] !== undefined) return mapped[1];
  if (isIPv4(address) || !isIPv6(address)) return address;
  const [head = '', tail = ''] = address.split('%')[0]?.split('::') ?? [];
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const hextets = address.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${hextets
    .slice(0, 4)
    .map((h) => h.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

const waitSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export function createSignInThrottle(
  store: BucketStore,
  limits: ThrottleLimits,
  onStoreError: (err: unknown) => void,
): SignInThrottle {
  const pairRule = ruleFor(limits.perUsernameAndAddress);
  const userRule = ruleFor(limits.perUsername);
  const addressRule = ruleFor(limits.perAddress);
  const take = async (key: string, rule: BucketRule) => {
    try {
      return await takeOne(store, key, rule);
    } catch (err) {
      onStoreError(err);
      throw new StoreUnavailable(err);
    }
  };
  return {
    async attempt(username, address) {
      const user = username.toLowerCase();
      const where = addressKey(address);
      const [byPair, byAddress] = await Promise.all([
        take(`signin:pair:${where}:${user}`, pairRule),
        take(`signin:addr:${where}`, addressRule),
      ]);
      if (!byPair.allowed || !byAddress.allowed) {
        return {
          allowed: false,
          retryAfterSeconds: waitSeconds(
            Math.max(
              byPair.allowed ? 0 : byPair.retryAfterMs,
              byAddress.allowed ? 0 : byAddress.retryAfterMs,
            ),
          ),
        };
      }
      const byUser = await take(`signin:user:${user}`, userRule);
      return byUser.allowed
        ? { allowed: true, retryAfterSeconds: 0 }
        : { allowed: false, retryAfterSeconds: waitSeconds(byUser.retryAfterMs) };
    },
  };
}
