// What a busy machine can cost an exactness test under contention. A token bucket loses tokens
// only while it sits full with nobody asking for them; that is what a limiter wrongly refusing
// would cause, and also what happens when the load generator, the limiter or Redis is not
// scheduled (a 2-core machine running other tests). This records the stretches in which a take
// may not have reached Redis in time: a take or request slower than the bucket needs to fill, and
// gaps in which the test process itself did not run. Tests allow exactly the tokens those
// stretches could have refilled, and say how many, so a lost token outside them still fails.
import { performance } from 'node:perf_hooks';

export class Stalls {
  /** How long the bucket needs to fill from empty, ms: shorter stretches cannot overflow it. */
  readonly #fillMs: number;
  readonly #stretches: [number, number][] = [];
  #lastTurn = performance.now();

  constructor(fillMs: number) {
    this.#fillMs = fillMs;
  }

  /** A turn of the load loop: a gap since the last one is a stretch in which nothing was asked. */
  turn(): void {
    const now = performance.now();
    if (now - this.#lastTurn >= this.#fillMs) this.#stretches.push([this.#lastTurn, now]);
    this.#lastTurn = now;
  }

  /** A take or request that took from `start` to now. */
  took(start: number): void {
    const now = performance.now();
    if (now - start >= this.#fillMs) this.#stretches.push([start, now]);
  }

  /** The tokens the stretches could have refilled at `ratePerS` (overlapping stretches merged). */
  tokensAt(ratePerS: number): number {
    const sorted = [...this.#stretches].sort((a, b) => a[0] - b[0]);
    let tokens = 0;
    let open: [number, number] | undefined;
    const close = () => {
      if (open !== undefined) tokens += Math.ceil(((open[1] - open[0]) * ratePerS) / 1000);
    };
    for (const s of sorted) {
      if (open !== undefined && s[0] <= open[1]) open[1] = Math.max(open[1], s[1]);
      else {
        close();
        open = [s[0], s[1]];
      }
    }
    close();
    return tokens;
  }

  /** The stretches recorded, and their longest, ms (for the test's log line). */
  get summary(): string {
    const longest = Math.max(0, ...this.#stretches.map(([a, b]) => b - a));
    return `${this.#stretches.length} stretches of ${Math.round(this.#fillMs)} ms or more, the longest ${Math.round(longest)} ms`;
  }
}

/**
 * At a burst of one token, a bucket is full the moment it can pay for a take, so it loses refill
 * for every moment the next take arrives after that: at most the time that take spent on its way
 * to Redis (its own duration) plus any time this process was not running to send it. This adds
 * those up, so a test can forgive exactly that and still fail on a refusal held too long.
 */
export class Lateness {
  #ms = 0;
  #lastTurn = performance.now();

  /** A turn of the load loops, which wait `paceMs` each: a longer gap since the last turn of any counts. */
  turn(paceMs: number): void {
    const now = performance.now();
    if (now - this.#lastTurn > paceMs + 1) this.#ms += now - this.#lastTurn;
    this.#lastTurn = now;
  }

  /** An admitted take that took from `start` to now. */
  admitted(start: number): void {
    this.#ms += performance.now() - start;
  }

  /** The tokens refilled in all that time at `ratePerS`. */
  tokensAt(ratePerS: number): number {
    return Math.ceil((this.#ms * ratePerS) / 1000);
  }

  get ms(): number {
    return Math.round(this.#ms);
  }
}
