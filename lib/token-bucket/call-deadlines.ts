// The Redis store's command timeout: one timer for all the calls in flight, armed for the oldest
// one's deadline, over a list of the calls in send order. ioredis' commandTimeout arms a timer per
// command and deletes a property of the command when it clears it, which turns every command
// object into a slow dictionary.
import { performance } from 'node:perf_hooks';
import { StoreUnavailableError } from './bucket-store.ts';
import { InFlightCall, type KeepRefusal, type PendingTake } from './in-flight-call.ts';

export class CallDeadlines {
  readonly #timeoutMs: number;
  /** Where a refused take's reply is remembered, when the store answers refusals itself. */
  readonly #keepRefusal: KeepRefusal | undefined;
  /** The oldest call not settled yet, and the newest call sent; settled calls after the oldest stay in the list until it passes them. */
  #oldest: InFlightCall | undefined;
  #newest: InFlightCall | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** performance.now() when the deadline timer last fired (before that turn's I/O was read). */
  #checkedAt = 0;

  /** `timeoutMs`: how long Redis may leave the oldest call waiting, ms. */
  constructor(timeoutMs: number, keepRefusal: KeepRefusal | undefined) {
    this.#timeoutMs = timeoutMs;
    this.#keepRefusal = keepRefusal;
  }

  /** A call leaving now with `batch`: listed last, its deadline the timeout from now. */
  open(batch: PendingTake[]): InFlightCall {
    const now = performance.now();
    const call = new InFlightCall(
      batch,
      now,
      now + this.#timeoutMs,
      this.#settle,
      this.#keepRefusal,
    );
    if (this.#newest === undefined) this.#oldest = call;
    else this.#newest.next = call;
    this.#newest = call;
    if (this.#timer === undefined) this.#arm(this.#timeoutMs);
    return call;
  }

  /**
   * Marks a call settled and returns its takes, or undefined when it had settled already. An
   * answer restarts the timeout of the next call waiting: Redis is answering.
   */
  readonly #settle = (call: InFlightCall, answered: boolean): PendingTake[] | undefined => {
    const takes = call.batch;
    if (takes === undefined) return undefined;
    call.batch = undefined;
    if (answered) {
      let next = call.next;
      while (next !== undefined && next.batch === undefined) next = next.next;
      if (next !== undefined)
        next.deadline = Math.max(next.deadline, performance.now() + this.#timeoutMs);
    }
    let oldest = this.#oldest;
    while (oldest !== undefined && oldest.batch === undefined) oldest = oldest.next;
    this.#oldest = oldest;
    if (oldest === undefined) this.#newest = undefined;
    return takes;
  };

  #arm(ms: number): void {
    this.#timer = setTimeout(this.#expire, Math.max(1, ms));
    this.#timer.unref();
  }

  /**
   * The deadline timer. The timeout is the connection's: it runs out when Redis has not answered
   * the oldest call waiting for that long (a call's deadline restarts when the call before it is
   * answered, #settle), not when the event loop is late. A timer fires late when the loop was
   * busy, and a reply Redis sent in time may then sit unread in the socket; so the check waits for
   * this turn's I/O (setImmediate runs after the poll phase) and judges by the time the timer
   * fired: any reply that had arrived by then was read in that poll and is the decision it is.
   */
  readonly #expire = (): void => {
    this.#checkedAt = performance.now();
    setImmediate(this.#expireAfterIo);
  };

  /**
   * When the oldest call waiting was not answered by its deadline, Redis is not answering: it and
   * every later call past its own deadline fail. Then waits for the oldest one left.
   */
  readonly #expireAfterIo = (): void => {
    this.#timer = undefined;
    const before = this.#checkedAt;
    // #settle keeps #oldest on the oldest unsettled call.
    for (
      let call = this.#oldest;
      call !== undefined && call.deadline <= before;
      call = this.#oldest
    ) {
      call.failed(
        new StoreUnavailableError(`redis bucket store: no answer within ${this.#timeoutMs} ms`),
      );
    }
    const oldest = this.#oldest;
    if (oldest !== undefined) this.#arm(oldest.deadline - performance.now());
  };
}
