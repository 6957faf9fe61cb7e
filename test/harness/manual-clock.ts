// A clock the test moves by hand (operator/runtime/clock.ts port): timers fire only on advance().
import type { Clock } from '../../operator/runtime/clock.ts';

export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #timers = new Map<number, { at: number; fn: () => void }>();

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimer(fn: () => void, ms: number): () => void {
    const id = ++this.#seq;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return () => this.#timers.delete(id);
  }

  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves time forward, firing due timers in time order (and yielding to promises between them). */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.#timers)
        if (entry[1].at <= target && (next === undefined || entry[1].at < next[1].at)) next = entry;
      if (next === undefined) break;
      this.#timers.delete(next[0]);
      this.#now = Math.max(this.#now, next[1].at);
      next[1].fn();
      await flush();
    }
    this.#now = target;
    await flush();
  }
}

/** Lets pending promise callbacks run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}
