// A shared informer: list, then watch from the list's resourceVersion, keeping an in-memory
// cache and calling handlers on every change. Unlike @kubernetes/client-node's ListWatch, it
// restarts on ANY failure (not only 410 Gone) with exponential backoff, and relists periodically
// so that a missed event cannot hide drift for longer than one relist interval.
import type { Logger } from 'pino';
import { backoffDelay, type BackoffPolicy } from './backoff.ts';
import { sleep, type Clock } from './clock.ts';
import { isGone, isThrottled } from './errors.ts';
import type { KubeClient } from './kube-client.ts';
import { keyOf, objectKey, type KubeObject } from './kube-object.ts';
import { trimForCache } from './trim-for-cache.ts';
import type { ResourceType } from './resource-types.ts';

/** Consecutive 429 answers logged at info before they are logged as warnings. */
export const THROTTLED_QUIETLY = 3;

export interface InformerHandler {
  onAdd?(obj: KubeObject): void;
  onUpdate?(oldObj: KubeObject, newObj: KubeObject): void;
  onDelete?(obj: KubeObject): void;
}

export interface InformerOptions {
  type: ResourceType;
  /** Namespaces to watch; undefined = all namespaces (one cluster-wide list+watch). */
  namespaces?: readonly string[];
  labelSelector?: string;
  /** Cache metadata only (PartialObjectMetadata): readers GET the few objects whose contents they need. */
  metadataOnly?: boolean;
  /**
   * Objects the cache holds; the rest are dropped as they arrive (a label anyone can set is no
   * proof that the operator made an object, so children are kept by their owner reference). It may
   * change its answer over time (a Deployment becomes the target of a route): an object it drops is
   * added on its next event, and a deletion it keeps is reported even if the cache never held it.
   */
  keep?: (obj: KubeObject) => boolean;
  /** Relist (full list, diffed against the cache) at least this often, ms. */
  relistIntervalMs: number;
  /** Delay between restarts after a failed list or watch. */
  backoff: BackoffPolicy;
  /** Server-side watch timeout, s. */
  watchTimeoutSeconds?: number;
  onRestart?: (reason: string) => void;
}

interface Index {
  readonly keysOf: (obj: KubeObject) => readonly string[];
  /** index key -> object keys */
  readonly entries: Map<string, Set<string>>;
}

export class Informer {
  readonly type: ResourceType;
  /** The cached objects carry metadata only. */
  readonly metadataOnly: boolean;
  readonly #client: KubeClient;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #options: InformerOptions;
  readonly #store = new Map<string, KubeObject>();
  readonly #handlers: InformerHandler[] = [];
  readonly #stop = new AbortController();
  readonly #syncedScopes = new Set<string>();
  readonly #syncWaiters: Array<() => void> = [];
  readonly #loops: Promise<void>[] = [];
  readonly #indexes = new Map<string, Index>();

  constructor(client: KubeClient, clock: Clock, log: Logger, options: InformerOptions) {
    this.type = options.type;
    this.metadataOnly = options.metadataOnly === true;
    this.#client = client;
    this.#clock = clock;
    this.#log = log.child({ informer: options.type.plural });
    this.#options = options;
  }

  addHandler(handler: InformerHandler): void {
    this.#handlers.push(handler);
  }

  /**
   * Keeps the cached objects findable by keysOf (e.g. routes by the Deployment they target), for
   * event mappings that would otherwise scan the whole cache on every event.
   */
  addIndex(name: string, keysOf: (obj: KubeObject) => readonly string[]): void {
    const index: Index = { keysOf, entries: new Map() };
    this.#indexes.set(name, index);
    for (const [key, obj] of this.#store) this.#indexAdd(index, key, obj);
  }

  /** The cached objects whose index `name` has key `value`. */
  byIndex(name: string, value: string): KubeObject[] {
    const keys = this.#indexes.get(name)?.entries.get(value);
    if (keys === undefined) return [];
    return [...keys].flatMap((k) => this.#store.get(k) ?? []);
  }

  get(namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#store.get(objectKey(namespace, name));
  }

  list(namespace?: string): KubeObject[] {
    const all = [...this.#store.values()];
    return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
  }

  get size(): number {
    return this.#store.size;
  }

  get hasSynced(): boolean {
    return this.#syncedScopes.size === this.#scopes().length;
  }

  waitForSync(): Promise<void> {
    if (this.hasSynced) return Promise.resolve();
    return new Promise((resolve) => this.#syncWaiters.push(resolve));
  }

  start(): void {
    for (const scope of this.#scopes()) this.#loops.push(this.#run(scope));
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await Promise.all(this.#loops);
  }

  #scopes(): Array<string | undefined> {
    return this.#options.namespaces === undefined || this.#options.namespaces.length === 0
      ? [undefined]
      : [...this.#options.namespaces];
  }

  async #run(namespace: string | undefined): Promise<void> {
    const { type, labelSelector, metadataOnly, keep, relistIntervalMs, backoff } = this.#options;
    const scope = namespace ?? '*';
    let failures = 0;
    while (!this.#stop.signal.aborted) {
      try {
        const listed = await this.#client.list(type, {
          namespace,
          labelSelector,
          metadataOnly,
          keep,
        });
        this.#replace(namespace, listed.items);
        this.#markSynced(scope);
        failures = 0;
        let resourceVersion = listed.resourceVersion;
        const relistAt = this.#clock.now() + relistIntervalMs;
        while (!this.#stop.signal.aborted && this.#clock.now() < relistAt) {
          const window = new AbortController();
          const cancel = this.#clock.setTimer(
            () => window.abort(),
            Math.max(0, relistAt - this.#clock.now()),
          );
          const watchStarted = this.#clock.now();
          try {
            await this.#client.watch(
              type,
              {
                namespace,
                labelSelector,
                metadataOnly,
                resourceVersion,
                timeoutSeconds: this.#options.watchTimeoutSeconds,
              },
              (event) => {
                const rv = event.object.metadata.resourceVersion;
                if (rv !== undefined && rv !== '') resourceVersion = rv;
                if (event.type === 'BOOKMARK') return;
                if (event.type === 'DELETED') this.#remove(event.object, true);
                else this.#upsert(event.object);
              },
              AbortSignal.any([this.#stop.signal, window.signal]),
            );
          } finally {
            cancel();
          }
          // A watch the server ends at once, again and again, would spin: treat it as a failure.
          if (
            !window.signal.aborted &&
            !this.#stop.signal.aborted &&
            this.#clock.now() - watchStarted < 1000
          ) {
            throw new Error('watch closed immediately');
          }
        }
      } catch (err) {
        if (this.#stop.signal.aborted) break;
        const gone = isGone(err);
        const delay = gone ? 0 : backoffDelay(backoff, failures++);
        const reason = gone ? 'gone' : 'error';
        this.#options.onRestart?.(reason);
        if (gone) this.#log.info({ namespace }, 'watch expired (410), relisting');
        // A fresh install sees 429 "storage is (re)initializing" for a CRD created a moment
        // before: the first few are routine, more in a row deserve a warning.
        else if (isThrottled(err) && failures <= THROTTLED_QUIETLY)
          this.#log.info(
            { err, namespace, delayMs: delay },
            'API server asked to retry later (429), retrying after backoff',
          );
        else
          this.#log.warn(
            { err, namespace, delayMs: delay },
            'list/watch failed, restarting after backoff',
          );
        await sleep(this.#clock, delay, this.#stop.signal);
      }
    }
  }

  #markSynced(scope: string): void {
    this.#syncedScopes.add(scope);
    if (this.hasSynced) for (const resolve of this.#syncWaiters.splice(0)) resolve();
  }

  #replace(namespace: string | undefined, items: KubeObject[]): void {
    const seen = new Set<string>();
    for (const item of items) {
      seen.add(keyOf(item));
      this.#upsert(item);
    }
    for (const [key, obj] of this.#store) {
      if (namespace !== undefined && obj.metadata.namespace !== namespace) continue;
      if (!seen.has(key)) this.#remove(obj);
    }
  }

  #upsert(incoming: KubeObject): void {
    // An object that stops qualifying (its owner reference removed) leaves the cache.
    if (this.#options.keep !== undefined && !this.#options.keep(incoming)) {
      this.#remove(incoming);
      return;
    }
    const obj = trimForCache(incoming);
    const key = keyOf(obj);
    const old = this.#store.get(key);
    if (old !== undefined && old.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    this.#store.set(key, obj);
    for (const index of this.#indexes.values()) {
      if (old !== undefined) this.#indexDelete(index, key, old);
      this.#indexAdd(index, key, obj);
    }
    for (const h of this.#handlers) {
      if (old === undefined) h.onAdd?.(obj);
      else h.onUpdate?.(old, obj);
    }
  }

  /** watched: a DELETED event, reported even if the cache dropped the object before keep wanted it. */
  #remove(obj: KubeObject, watched = false): void {
    const key = keyOf(obj);
    const old = this.#store.get(key);
    if (old === undefined) {
      const keep = this.#options.keep;
      if (watched && keep !== undefined && keep(obj))
        for (const h of this.#handlers) h.onDelete?.(trimForCache(obj));
      return;
    }
    this.#store.delete(key);
    for (const index of this.#indexes.values()) this.#indexDelete(index, key, old);
    for (const h of this.#handlers) h.onDelete?.(old);
  }

  #indexAdd(index: Index, key: string, obj: KubeObject): void {
    for (const value of index.keysOf(obj)) {
      const keys = index.entries.get(value);
      if (keys === undefined) index.entries.set(value, new Set([key]));
      else keys.add(key);
    }
  }

  #indexDelete(index: Index, key: string, obj: KubeObject): void {
    for (const value of index.keysOf(obj)) {
      const keys = index.entries.get(value);
      keys?.delete(key);
      if (keys?.size === 0) index.entries.delete(value);
    }
  }
}
