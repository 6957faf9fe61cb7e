// Request bodies each key has arriving (from the limiter decision until the body ended or the
// response closed), so that one key cannot hold every upstream connection: a slow upload holds its
// connection for as long as its body trickles in, and the token bucket only counts requests as
// they start.
// One Map entry per key with a request in flight, none when the bound is off. The hold step of the
// admission pipeline (pipeline.ts) counts a request in; its front door releases it.
import type { AdmissionRequest } from './pipeline.ts';
import { limited, type Verdict } from './verdict.ts';

export class KeyInFlight {
  readonly #counts = new Map<string, number>();

  /** Counts one more request of `key` unless it already has `max` in flight (then false). */
  acquire(key: string, max: number): boolean {
    const n = this.#counts.get(key) ?? 0;
    if (n >= max) return false;
    this.#counts.set(key, n + 1);
    return true;
  }

  /** Ends one request of `key` counted by acquire(). */
  release(key: string): void {
    const n = this.#counts.get(key);
    if (n === undefined) return;
    if (n <= 1) this.#counts.delete(key);
    else this.#counts.set(key, n - 1);
  }

  /** Keys with a request in flight (for tests). */
  get size(): number {
    return this.#counts.size;
  }
}

/**
 * The bound one key gets: `maxInFlightPerKey`, and at most a quarter of the upstream connections
 * (rounded up), so that one key leaves three quarters of the pool to the others. 0: no bound.
 */
export function keyInFlightBound(maxInFlightPerKey: number, connections: number): number {
  if (maxInFlightPerKey === 0) return 0;
  return Math.min(maxInFlightPerKey, Math.ceil(connections / 4));
}

/**
 * The hold step: a request with a body counts against its key's in-flight bound until the body
 * has arrived or its response closed (refused with 429 past it, before any charge). Bodiless
 * requests are not counted: they hold a connection only as long as the upstream takes, and a
 * burst of them is the token bucket's to judge.
 */
export function hold(a: AdmissionRequest): Verdict | undefined {
  const body = a.body;
  const max = a.rt.maxInFlightPerKey;
  if (max === 0 || body === undefined || body.complete) return undefined;
  const key = a.key as string;
  if (!a.admission.keys.acquire(key, max)) {
    a.rt.metrics.outcome.key_in_flight.inc();
    const log = a.admission.log;
    if (log.isLevelEnabled('debug'))
      log.debug({ route: a.rt.routeId, max }, 'key has too many requests in flight; refused');
    const detail = `Too many request bodies of this client still arriving (at most ${max}); retry once one has finished.`;
    return limited(1, detail, []);
  }
  a.held = key;
  body.once('end', () => releaseHeld(a));
  return undefined;
}

/** Ends the hold of a request counted by the hold step (once, whichever of its body's end and its response's close comes first). */
export function releaseHeld(a: AdmissionRequest): void {
  const key = a.held;
  if (key === undefined) return;
  a.held = undefined;
  a.admission.keys.release(key);
}
