// Time as a port: the composition root (main.ts) passes the real clock; unit tests pass one they
// control. Nothing in operator/ calls Date.now() or setTimeout for decisions except through this.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls fn after ms; the returned function cancels it. */
  setTimer(fn: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    // Node timers overflow past 2^31-1 ms (~24.8 days) and fire at once; a long wait fires early
    // instead, which every caller tolerates (a reconcile recomputes what is due).
    const t = setTimeout(fn, Math.min(Math.max(0, ms), 2 ** 31 - 1));
    t.unref();
    return () => clearTimeout(t);
  },
};

/** Resolves after ms on the clock, or early (without error) when the signal aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) {
      resolve();
      return;
    }
    const onAbort = () => {
      cancel();
      resolve();
    };
    const cancel = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
