// A bound on concurrent password hashing. scrypt runs on libuv's thread pool (4 threads unless
// UV_THREADPOOL_SIZE says otherwise), and so does other work the server waits on; a burst of
// sign-ins would otherwise take every thread and stall the rest. At most `concurrency` hashes run
// at once, at most `queue` wait behind them, and an attempt beyond that is refused at once
// (GateFull: the routes answer 503 with Retry-After) instead of waiting without bound.

import { availableParallelism } from 'node:os';

/**
 * Hashes at once when not configured: leave a core for the event loop and token signing, and two
 * pool threads for everything else (token signing runs there too, through WebCrypto).
 */
export function defaultHashConcurrency(env: NodeJS.ProcessEnv = process.env, cores = availableParallelism()): number {
  const pool = Number(env['UV_THREADPOOL_SIZE']) || 4;
  return Math.max(1, Math.min(pool - 2, cores - 1));
}

export class GateFull extends Error {
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super('too many sign-ins are being checked; try again shortly');
    this.name = 'GateFull';
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export interface PasswordGate {
  /** Runs fn when a slot is free; throws GateFull when the queue is full. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** Hashes running and waiting (for metrics and tests). */
  readonly load: () => { readonly running: number; readonly waiting: number };
}

export function createPasswordGate(options: { readonly concurrency: number; readonly queue: number }): PasswordGate {
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next !== undefined) next();
    else running--;
  };
  return {
    async run(fn) {
      if (running >= options.concurrency) {
        if (waiting.length >= options.queue) throw new GateFull(1);
        // The slot is handed over by release(): `running` stays as it is.
        await new Promise<void>((resolve) => waiting.push(resolve));
      } else {
        running++;
      }
      try {
        return await fn();
      } finally {
        release();
      }
    },
    load: () => ({ running, waiting: waiting.length }),
  };
}
