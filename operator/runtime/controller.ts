// One controller = one reconciler + its work queue + workers. Reconcile is level-based: it gets a
// key, never an event; it is called again for the same key after an error (with backoff), after
// requeueAfterMs, on every change of the object or one it owns, and on every periodic resync.
import type { Logger } from 'pino';
import { backoffDelay, type BackoffPolicy } from './backoff.ts';
import type { Clock } from './clock.ts';
import { isNamespaceTerminating } from './errors.ts';
import type { OperatorMetrics } from './metrics.ts';
import { WorkQueue } from './work-queue.ts';

export interface ReconcileResult {
  /** Reconcile again after this long, ms (e.g. to rotate a key on time). */
  requeueAfterMs?: number;
  /**
   * Waiting on something no watched event announces (a foreign object to go, a team's rollout):
   * look again later, less often each time (ControllerOptions.waitBackoff), so that many objects
   * stuck for good cost the API server less and less.
   */
  waiting?: true;
}

/** The default waitBackoff: 5 s, doubling, at most 2 min. */
export const WAIT_BACKOFF: BackoffPolicy = { baseMs: 5000, maxMs: 120_000, jitter: 0.1 };

export interface Reconciler {
  readonly name: string;
  reconcile(key: string): Promise<ReconcileResult>;
}

export interface ControllerOptions {
  reconciler: Reconciler;
  workers: number;
  backoff: BackoffPolicy;
  /** Every key the controller is responsible for (the periodic resync queues them all). */
  keys: () => string[];
  /** Re-queue every key this often, ms (0 = never). */
  resyncIntervalMs: number;
  /** Delays of the `waiting` results of one key in a row (default WAIT_BACKOFF). */
  waitBackoff?: BackoffPolicy;
}

export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  readonly #o: ControllerOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: OperatorMetrics;
  readonly #workers: Promise<void>[] = [];
  /** `waiting` results in a row, per key. */
  readonly #waits = new Map<string, number>();
  #cancelResync: (() => void) | undefined;
  #stopped = false;

  constructor(options: ControllerOptions, clock: Clock, log: Logger, metrics: OperatorMetrics) {
    this.name = options.reconciler.name;
    this.#o = options;
    this.#clock = clock;
    this.#log = log.child({ controller: this.name });
    this.#metrics = metrics;
    const labels = { controller: this.name };
    this.queue = new WorkQueue(clock, options.backoff, {
      onAdd: () => metrics.queueAdds.inc(labels),
      onRetry: () => metrics.queueRetries.inc(labels),
      onDepth: (depth) => metrics.queueDepth.set(labels, depth),
    });
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  /** Queues every key and starts the workers and the periodic resync. */
  start(): void {
    for (const key of this.#o.keys()) this.queue.add(key);
    for (let i = 0; i < this.#o.workers; i++) this.#workers.push(this.#work());
    this.#scheduleResync();
  }

  /** Stops handing out keys and waits for reconciles in flight to finish. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancelResync?.();
    this.queue.shutDown();
    await Promise.all(this.#workers);
  }

  #scheduleResync(): void {
    if (this.#o.resyncIntervalMs <= 0 || this.#stopped) return;
    this.#cancelResync = this.#clock.setTimer(() => {
      for (const key of this.#o.keys()) this.queue.add(key);
      this.#scheduleResync();
    }, this.#o.resyncIntervalMs);
  }

  async #work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      const stopTimer = this.#metrics.reconcileDuration.startTimer({ controller: this.name });
      try {
        const result = await this.#o.reconciler.reconcile(key);
        this.queue.forget(key);
        const waits = result.waiting === true ? (this.#waits.get(key) ?? 0) : 0;
        if (result.waiting === true) this.#waits.set(key, waits + 1);
        else this.#waits.delete(key);
        const waitMs =
          result.waiting === true
            ? backoffDelay(this.#o.waitBackoff ?? WAIT_BACKOFF, waits)
            : undefined;
        const delayMs = Math.min(result.requeueAfterMs ?? Infinity, waitMs ?? Infinity);
        if (delayMs !== Infinity) this.queue.addAfter(key, delayMs);
        this.#metrics.reconcileTotal.inc({
          controller: this.name,
          result: delayMs === Infinity ? 'success' : 'requeue',
        });
      } catch (err) {
        if (isNamespaceTerminating(err)) {
          // The namespace is being deleted and takes the object with it: done, not failed.
          this.queue.forget(key);
          this.#metrics.reconcileTotal.inc({ controller: this.name, result: 'success' });
          this.#log.debug({ key }, 'namespace is being deleted; nothing to reconcile');
          continue;
        }
        const delayMs = this.queue.addRateLimited(key);
        this.#metrics.reconcileTotal.inc({ controller: this.name, result: 'error' });
        this.#log.warn(
          { err, key, retryInMs: delayMs, failures: this.queue.failures(key) },
          'reconcile failed',
        );
      } finally {
        stopTimer();
        this.queue.done(key);
      }
    }
  }
}
