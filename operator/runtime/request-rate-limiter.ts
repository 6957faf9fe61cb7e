// The operator's client-side request rate (client-go's QPS/burst): a token bucket in front of every
// request to the API server, so that a flood of work (hundreds of objects stuck at once, a resync of
// thousands) is spread out instead of sent at once to an API server other clients share. The bucket
// math is the limiter's own pure take (lib/token-bucket/bucket.ts); this adds the waiting. Callers
// wait in arrival order (FIFO), so no request waits behind more than the ones that came before it.
import { take, type BucketRule, type BucketState } from '../../lib/token-bucket/bucket.ts';
import type { Clock } from './clock.ts';

export interface RequestRateSettings {
  /** Requests per second over time (integer >= 1). */
  qps: number;
  /** Requests that may go at once after a quiet spell (integer >= 1). */
  burst: number;
}

export interface RequestRateLimiter {
  /** Resolves when the request may go (at once while the bucket holds a token), or early when the signal aborts. */
  wait(signal?: AbortSignal): Promise<void>;
  /** Callers waiting now. */
  readonly waiting: number;
}

export function createRequestRateLimiter(
  settings: RequestRateSettings,
  clock: Clock,
): RequestRateLimiter {
  const rule: BucketRule = {
    replenishRate: settings.qps,
    burstCapacity: settings.burst,
    requestedTokens: 1,
  };
  let state: BucketState | undefined;
  const waiters: Array<() => void> = [];
  let cancelTimer: (() => void) | undefined;

  /** Takes one token; a refused take writes nothing (as a bucket store does). Returns the wait, ms, when refused. */
  function takeOne(): number {
    const result = take(state, rule, clock.now(), 1);
    if (!result.decision.allowed) return Math.max(1, result.decision.retryAfterMs);
    state = result.state;
    return 0;
  }

  /** Lets the waiters at the head go while tokens last, then sleeps until the next token. */
  function drain(): void {
    cancelTimer = undefined;
    while (waiters.length > 0) {
      const waitMs = takeOne();
      if (waitMs > 0) {
        cancelTimer = clock.setTimer(drain, waitMs);
        return;
      }
      waiters.shift()?.();
    }
  }

  return {
    wait(signal) {
      if (signal?.aborted === true) return Promise.resolve();
      // Nobody ahead and a token at hand: no timer, no promise queue.
      if (waiters.length === 0 && takeOne() === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const go = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          const i = waiters.indexOf(go);
          if (i >= 0) waiters.splice(i, 1);
          resolve();
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        waiters.push(go);
        if (cancelTimer === undefined) drain();
      });
    },
    get waiting() {
      return waiters.length;
    },
  };
}
