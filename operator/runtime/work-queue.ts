// A per-object work queue with the semantics of client-go's workqueue: a key is queued at most
// once (dedup), never handed to two workers at once (a key added while being processed is queued
// again when done), and retried with per-key exponential backoff until forget(key). Unlike
// client-go's FIFO, the keys ready to run are handed out fairly among namespaces (round robin):
// one namespace with thousands of queued objects delays another's next key by one reconcile per
// busy namespace, not by its whole backlog.
import { backoffDelay, type BackoffPolicy } from './backoff.ts';
import type { Clock } from './clock.ts';

export interface WorkQueueHooks {
  onAdd?: () => void;
  onRetry?: () => void;
  onDepth?: (depth: number) => void;
}

/** The namespace of a key (`ns/name`, or `ns` alone for per-namespace controllers). */
function namespaceOf(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? key : key.slice(0, slash);
}

/** Keys in FIFO order within a namespace, namespaces served in turn. */
class FairQueue {
  /** Map order is the turn order: a namespace served goes to the back. */
  readonly #byNamespace = new Map<string, string[]>();
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(key: string): void {
    const ns = namespaceOf(key);
    const keys = this.#byNamespace.get(ns);
    if (keys === undefined) this.#byNamespace.set(ns, [key]);
    else keys.push(key);
    this.#length++;
  }

  shift(): string | undefined {
    const first = this.#byNamespace.entries().next();
    if (first.done === true) return undefined;
    const [ns, keys] = first.value;
    const key = keys.shift();
    this.#byNamespace.delete(ns);
    if (keys.length > 0) this.#byNamespace.set(ns, keys);
    this.#length--;
    return key;
  }
}

export class WorkQueue {
  readonly #clock: Clock;
  readonly #policy: BackoffPolicy;
  readonly #hooks: WorkQueueHooks;
  readonly #queue = new FairQueue();
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #delayed = new Map<string, { at: number; cancel: () => void }>();
  readonly #waiters: Array<(key: string | undefined) => void> = [];
  #shuttingDown = false;

  constructor(clock: Clock, policy: BackoffPolicy, hooks: WorkQueueHooks = {}) {
    this.#clock = clock;
    this.#policy = policy;
    this.#hooks = hooks;
  }

  get length(): number {
    return this.#queue.length;
  }

  /** Queues key now (no-op when it is queued already). */
  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#hooks.onAdd?.();
    this.#dirty.add(key);
    if (this.#processing.has(key)) return; // re-queued by done()
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) {
      this.#dirty.delete(key);
      this.#processing.add(key);
      waiter(key);
      return;
    }
    this.#queue.push(key);
    this.#hooks.onDepth?.(this.#queue.length);
  }

  /** Queues key after delayMs; an earlier pending delay for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = this.#clock.now() + delayMs;
    const pending = this.#delayed.get(key);
    if (pending !== undefined) {
      if (pending.at <= at) return;
      pending.cancel();
    }
    const cancel = this.#clock.setTimer(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.#delayed.set(key, { at, cancel });
  }

  /** Queues key after its next backoff delay (a failed reconcile). Returns the delay, ms. */
  addRateLimited(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    const delay = backoffDelay(this.#policy, failures);
    this.#hooks.onRetry?.();
    this.addAfter(key, delay);
    return delay;
  }

  /** Resets key's backoff (a successful reconcile). */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** The next key to process, or undefined once the queue shuts down. Call done(key) after. */
  get(): Promise<string | undefined> {
    const key = this.#queue.shift();
    if (key !== undefined) {
      this.#dirty.delete(key);
      this.#processing.add(key);
      this.#hooks.onDepth?.(this.#queue.length);
      return Promise.resolve(key);
    }
    if (this.#shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key) && !this.#shuttingDown) {
      this.#dirty.delete(key);
      this.add(key);
    }
  }

  /** Stops handing out keys; pending get() calls resolve with undefined. */
  shutDown(): void {
    this.#shuttingDown = true;
    for (const { cancel } of this.#delayed.values()) cancel();
    this.#delayed.clear();
    for (const waiter of this.#waiters.splice(0)) waiter(undefined);
  }

  /** True while some key is being processed (graceful shutdown waits for this to end). */
  get busy(): boolean {
    return this.#processing.size > 0;
  }
}
