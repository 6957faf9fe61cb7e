// A bound on concurrent password hashing. scrypt runs on libuv's thread pool (4 threads unless
// UV_THREADPOOL_SIZE says otherwise), and so does other work the server waits on; a burst of
// sign-ins would otherwise take every thread and stall the rest. At most `concurrency` hashes run
// at once, at most `queue` wait behind them, and an attempt beyond that is refused at once
// (GateFull: the routes answer 503 with Retry-After) instead of waiting without bound. Each client
// address gets a fair share (createPasswordGate): one address cannot take the gate from the rest.

import { availableParallelism } from 'node:os';

/**
 * Hashes at once when not configured: leave a core for the event loop and token signing, and two
 * pool threads for everything else (token signing runs there too, through WebCrypto).
 */
export function defaultHashConcurrency(
  env: NodeJS.ProcessEnv = process.env,
  cores = availableParallelism(),
): number {
  const pool = Number(env['UV_THREADPOOL_SIZE']) || 4;
  return Math.max(1, Math.min(pool - 2, cores - 1));
}

export class GateFull extends Error {
  readonly retryAfterSeconds: number;
  /** full: the whole queue; key: this client's share (its own attempts already being checked). */
  readonly reason: 'full' | 'key';
  constructor(retryAfterSeconds: number, reason: 'full' | 'key' = 'full') {
    super(
      reason === 'full'
        ? 'too many sign-ins are being checked; try again shortly'
        : 'this client already has sign-ins being checked; try again shortly',
    );
    this.name = 'GateFull';
    this.retryAfterSeconds = retryAfterSeconds;
    this.reason = reason;
  }
}

export interface PasswordGate {
  /**
   * Runs fn when a slot is free, on behalf of `key` (the client address); throws GateFull when the
   * queue is full or `key` already holds its share.
   */
  run<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /** Hashes running and waiting (for metrics and tests). */
  readonly load: () => { readonly running: number; readonly waiting: number };
}

/** Sign-ins of one client address checked or waiting at once, when not configured. */
export const DEFAULT_HASH_PER_KEY = 2;

/**
 * Fair among keys: a key holds at most `perKey` places (running or waiting), so one address
 * flooding the sign-in cannot fill the queue, and a freed slot goes to the keys in turn (round
 * robin), not in arrival order, so a newcomer waits for one hash per active key, not for the flood.
 */
export function createPasswordGate(options: {
  readonly concurrency: number;
  readonly queue: number;
  readonly perKey?: number;
}): PasswordGate {
  const perKey = options.perKey ?? DEFAULT_HASH_PER_KEY;
  let running = 0;
  let waiting = 0;
  /** Places each key holds, running or waiting. */
  const held = new Map<string, number>();
  /** Waiters by key; the Map's order is the round-robin order (a served key moves to the back). */
  const queues = new Map<string, (() => void)[]>();
  const release = () => {
    const first = queues.entries().next();
    if (first.done === true) {
      running--;
      return;
    }
    const [key, waiters] = first.value;
    const next = waiters.shift();
    queues.delete(key);
    if (waiters.length > 0) queues.set(key, waiters);
    waiting--;
    next?.();
  };
  return {
    async run(key, fn) {
      const mine = held.get(key) ?? 0;
      if (mine >= perKey) throw new GateFull(1, 'key');
      if (running >= options.concurrency) {
        if (waiting >= options.queue) throw new GateFull(1);
        held.set(key, mine + 1);
        waiting++;
        // The slot is handed over by release(): `running` stays as it is.
        await new Promise<void>((resolve) => {
          const list = queues.get(key);
          if (list === undefined) queues.set(key, [resolve]);
          else list.push(resolve);
        });
      } else {
        held.set(key, mine + 1);
        running++;
      }
      try {
        return await fn();
      } finally {
        const left = (held.get(key) ?? 1) - 1;
        if (left === 0) held.delete(key);
        else held.set(key, left);
        release();
      }
    },
    load: () => ({ running, waiting }),
  };
}
