// An in-memory KubeClient for unit tests of reconcilers, informers and leader election: objects,
// resourceVersions, generations, watches and a log of every request, with failure injection.
// It imitates the API server only as far as the operator relies on it (apply merges maps and
// replaces lists, and removes what the same manager applied before and leaves out now; status is
// a subresource; a no-op apply changes nothing; lists and watches honour label selectors, and an
// object leaving a watch's selection is DELETED for it).
// kube-client-contract.ts holds it to the real kube-apiserver: the same suite runs on both.
import { randomUUID } from 'node:crypto';
import { GROUP } from '../../operator/api/index.ts';
import { KubeApiError } from '../../operator/runtime/errors.ts';
import type {
  KubeClient,
  ListOptions,
  WatchEvent,
  WatchOptions,
} from '../../operator/runtime/kube-client.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { canonicalJson } from '../../operator/runtime/compare.ts';
import {
  apiVersionOf,
  resourceTypeOf,
  type ResourceType,
} from '../../operator/runtime/resource-types.ts';
import { labelSelectorMatcher } from './label-selector.ts';
import { merge, mergeKeyed, release, type Json } from './server-side-apply.ts';

export interface RecordedRequest {
  verb: 'get' | 'list' | 'watch' | 'apply' | 'create' | 'update' | 'delete';
  kind: string;
  namespace: string | undefined;
  name: string | undefined;
  subresource?: string;
  /** apply only: the field manager, when not the client's own. */
  fieldManager?: string;
}

/** The key under which #appliedBy keeps what the client's own field manager last applied. */
const OWN_MANAGER = '';
/** ... and what it last applied to the status subresource (as { status }). */
const STATUS_MANAGER = '/status';

const WRITE_VERBS = new Set(['apply', 'create', 'update', 'delete']);

interface Watcher {
  type: ResourceType;
  namespace: string | undefined;
  selects: (labels: Record<string, string> | undefined) => boolean;
  onEvent: (e: WatchEvent) => void;
  end: (err?: Error) => void;
}

/** The API server counts metadata.generation only for these kinds (and every custom resource), not for ConfigMaps, Secrets, Services, Leases. */
const GENERATION_KINDS = new Set([
  'apps/Deployment',
  'networking.k8s.io/NetworkPolicy',
  'policy/PodDisruptionBudget',
]);
function countsGenerations(type: ResourceType): boolean {
  return type.group === GROUP || GENERATION_KINDS.has(`${type.group}/${type.kind}`);
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

/** What a metadata-only list or watch returns of an object (PartialObjectMetadata). */
function metadataOf(obj: KubeObject): KubeObject {
  return { apiVersion: obj.apiVersion, kind: obj.kind, metadata: clone(obj.metadata) };
}

export class MemoryKubeClient implements KubeClient {
  readonly requests: RecordedRequest[] = [];
  readonly #objects = new Map<string, KubeObject>();
  readonly #watchers = new Set<Watcher>();
  /** Every event with the resourceVersion it happened at: a watch from version V replays what came after V. */
  readonly #history: Array<{
    rv: number;
    type: ResourceType;
    event: WatchEvent;
    previous: KubeObject | undefined;
  }> = [];
  readonly #failures: Array<{ verb: RecordedRequest['verb']; kind?: string; error: Error }> = [];
  /** What each extra field manager last applied, per object key. */
  readonly #appliedBy = new Map<string, Map<string, Json>>();
  #rv = 1;

  /** Writes (apply/create/update/delete) recorded so far, optionally of one kind only. */
  writes(kind?: string): RecordedRequest[] {
    return this.requests.filter(
      (r) => WRITE_VERBS.has(r.verb) && (kind === undefined || r.kind === kind),
    );
  }

  /** The next request with this verb (and kind) fails with error. */
  failNext(verb: RecordedRequest['verb'], error: Error, kind?: string): void {
    this.#failures.push({ verb, kind, error });
  }

  /** Ends every open watch (with an error when given), as a dropped connection would. */
  breakWatches(error?: Error): void {
    for (const w of [...this.#watchers]) w.end(error);
  }

  /** Stored object (not a copy) for assertions. */
  peek(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#objects.get(this.#key(type, namespace, name));
  }

  all(type: ResourceType): KubeObject[] {
    return [...this.#objects.values()].filter(
      (o) => o.kind === type.kind && o.apiVersion === apiVersionOf(type),
    );
  }

  /** Writes an object as another actor would (kubectl edit, a controller-manager): no request recorded. */
  put(obj: KubeObject): KubeObject {
    const type = resourceTypeOf(obj.apiVersion, obj.kind);
    const key = this.#key(type, obj.metadata.namespace, obj.metadata.name);
    const existing = this.#objects.get(key);
    const next = clone(obj);
    // Like a write to the main resource of a kind with a status subresource: status is kept.
    if (!('status' in next) && existing !== undefined && 'status' in existing)
      next['status'] = clone(existing['status']);
    next.metadata.uid = existing?.metadata.uid ?? next.metadata.uid ?? randomUUID();
    next.metadata.generation =
      existing === undefined
        ? 1
        : (existing.metadata.generation ?? 1) + (this.#specChanged(existing, next) ? 1 : 0);
    next.metadata.creationTimestamp =
      existing?.metadata.creationTimestamp ?? new Date(0).toISOString();
    return this.#store(type, key, next, existing === undefined ? 'ADDED' : 'MODIFIED');
  }

  /** Deletes as another actor would. */
  remove(type: ResourceType, namespace: string | undefined, name: string): boolean {
    const key = this.#key(type, namespace, name);
    const existing = this.#objects.get(key);
    if (existing === undefined) return false;
    this.#objects.delete(key);
    this.#appliedBy.delete(key);
    this.#emit(type, {
      type: 'DELETED',
      object: {
        ...clone(existing),
        metadata: { ...existing.metadata, resourceVersion: String(++this.#rv) },
      },
    });
    return true;
  }

  async get(type: ResourceType, namespace: string | undefined, name: string) {
    this.#record({ verb: 'get', kind: type.kind, namespace, name });
    const o = this.#objects.get(this.#key(type, namespace, name));
    return o === undefined ? undefined : clone(o);
  }

  async list(type: ResourceType, options: ListOptions = {}) {
    this.#record({ verb: 'list', kind: type.kind, namespace: options.namespace, name: undefined });
    const selects = labelSelectorMatcher(options.labelSelector);
    const items = this.all(type)
      .filter(
        (o) =>
          (options.namespace === undefined || o.metadata.namespace === options.namespace) &&
          selects(o.metadata.labels),
      )
      .map((o) => (options.metadataOnly === true ? metadataOf(o) : clone(o)))
      .filter((o) => options.keep === undefined || options.keep(o));
    return { items, resourceVersion: String(this.#rv) };
  }

  watch(
    type: ResourceType,
    options: WatchOptions,
    onEvent: (e: WatchEvent) => void,
    signal: AbortSignal,
  ): Promise<void> {
    this.#record({ verb: 'watch', kind: type.kind, namespace: options.namespace, name: undefined });
    return new Promise((resolve, reject) => {
      const watcher: Watcher = {
        type,
        namespace: options.namespace,
        selects: labelSelectorMatcher(options.labelSelector),
        onEvent:
          options.metadataOnly === true
            ? (e) => onEvent({ type: e.type, object: metadataOf(e.object) })
            : onEvent,
        end: (err) => {
          this.#watchers.delete(watcher);
          if (err === undefined) resolve();
          else reject(err);
        },
      };
      if (signal.aborted) {
        resolve();
        return;
      }
      signal.addEventListener('abort', () => watcher.end(), { once: true });
      this.#watchers.add(watcher);
      const from = Number(options.resourceVersion);
      for (const h of this.#history)
        if (h.rv > from) this.#deliver(watcher, h.type, h.event, h.previous);
    });
  }

  async apply(obj: KubeObject, subresource?: 'status', fieldManager?: string) {
    const type = resourceTypeOf(obj.apiVersion, obj.kind);
    this.#record({
      verb: 'apply',
      kind: type.kind,
      namespace: obj.metadata.namespace,
      name: obj.metadata.name,
      subresource,
      ...(fieldManager === undefined ? {} : { fieldManager }),
    });
    const key = this.#key(type, obj.metadata.namespace, obj.metadata.name);
    const existing = this.#objects.get(key);
    if (fieldManager !== undefined && subresource === undefined)
      return this.#applyAs(fieldManager, type, key, existing, obj);
    if (subresource === 'status') {
      if (existing === undefined)
        throw new KubeApiError(404, `${type.kind} ${obj.metadata.name} not found`, 'NotFound');
      const next = clone(existing);
      next['status'] = merge(existing['status'], obj['status']);
      const managers = this.#appliedBy.get(key) ?? new Map<string, Json>();
      const before = managers.get(STATUS_MANAGER);
      const now = { status: clone(obj['status']) };
      if (before !== undefined) release(next, before, now);
      managers.set(STATUS_MANAGER, now);
      this.#appliedBy.set(key, managers);
      if (canonicalJson(next) === canonicalJson(existing)) return clone(existing);
      return clone(this.#store(type, key, next, 'MODIFIED'));
    }
    const { status: _ignored, ...body } = obj;
    const managers = this.#appliedBy.get(key) ?? new Map<string, Json>();
    const before = managers.get(OWN_MANAGER);
    managers.set(OWN_MANAGER, clone(body));
    this.#appliedBy.set(key, managers);
    if (existing === undefined) {
      const created: KubeObject = {
        ...clone(body),
        metadata: {
          ...clone(body.metadata),
          uid: randomUUID(),
          generation: 1,
          creationTimestamp: new Date(0).toISOString(),
        },
      };
      return clone(this.#store(type, key, created, 'ADDED'));
    }
    const next = merge(existing, body) as KubeObject;
    if (before !== undefined) release(next, before, body);
    next.metadata.resourceVersion = existing.metadata.resourceVersion;
    if (canonicalJson(next) === canonicalJson(existing)) return clone(existing);
    next.metadata.generation =
      (existing.metadata.generation ?? 1) + (this.#specChanged(existing, next) ? 1 : 0);
    return clone(this.#store(type, key, next, 'MODIFIED'));
  }

  /** apply by an extra field manager: adds what it applies (lists keyed by name merged), removes what it dropped. */
  #applyAs(
    manager: string,
    type: ResourceType,
    key: string,
    existing: KubeObject | undefined,
    obj: KubeObject,
  ): KubeObject {
    if (existing === undefined)
      throw new KubeApiError(
        422,
        `${type.kind} ${obj.metadata.name}: the memory client creates objects only with its own field manager`,
        'Invalid',
      );
    const { status: _ignored, ...body } = clone(obj);
    const next = mergeKeyed(existing, body) as KubeObject;
    const managers = this.#appliedBy.get(key) ?? new Map<string, Json>();
    const before = managers.get(manager);
    if (before !== undefined) release(next, before, body);
    managers.set(manager, body);
    this.#appliedBy.set(key, managers);
    next.metadata = {
      ...next.metadata,
      name: existing.metadata.name,
      resourceVersion: existing.metadata.resourceVersion,
    };
    if (canonicalJson(next) === canonicalJson(existing)) return clone(existing);
    next.metadata.generation =
      (existing.metadata.generation ?? 1) + (this.#specChanged(existing, next) ? 1 : 0);
    return clone(this.#store(type, key, next, 'MODIFIED'));
  }

  /**
   * The memory client keeps one default manager (what it applies without a fieldManager) whatever
   * its name: every controller's client is this one. Managers named on apply are tracked apart.
   */
  withFieldManager(): KubeClient {
    return this;
  }

  async create(obj: KubeObject) {
    const type = resourceTypeOf(obj.apiVersion, obj.kind);
    this.#record({
      verb: 'create',
      kind: type.kind,
      namespace: obj.metadata.namespace,
      name: obj.metadata.name,
    });
    const key = this.#key(type, obj.metadata.namespace, obj.metadata.name);
    if (this.#objects.has(key))
      throw new KubeApiError(
        409,
        `${type.kind} ${obj.metadata.name} already exists`,
        'AlreadyExists',
      );
    const created: KubeObject = {
      ...clone(obj),
      metadata: {
        ...clone(obj.metadata),
        uid: randomUUID(),
        generation: 1,
        creationTimestamp: new Date(0).toISOString(),
      },
    };
    return clone(this.#store(type, key, created, 'ADDED'));
  }

  async update(obj: KubeObject) {
    const type = resourceTypeOf(obj.apiVersion, obj.kind);
    this.#record({
      verb: 'update',
      kind: type.kind,
      namespace: obj.metadata.namespace,
      name: obj.metadata.name,
    });
    const key = this.#key(type, obj.metadata.namespace, obj.metadata.name);
    const existing = this.#objects.get(key);
    if (existing === undefined)
      throw new KubeApiError(404, `${type.kind} ${obj.metadata.name} not found`, 'NotFound');
    if (obj.metadata.resourceVersion !== existing.metadata.resourceVersion)
      throw new KubeApiError(409, 'the object has been modified', 'Conflict');
    const next = clone(obj);
    next.metadata.uid = existing.metadata.uid;
    next.metadata.generation =
      (existing.metadata.generation ?? 1) + (this.#specChanged(existing, next) ? 1 : 0);
    return clone(this.#store(type, key, next, 'MODIFIED'));
  }

  async delete(type: ResourceType, namespace: string | undefined, name: string, uid?: string) {
    this.#record({ verb: 'delete', kind: type.kind, namespace, name });
    const existing = this.#objects.get(this.#key(type, namespace, name));
    if (existing === undefined) return false;
    if (uid !== undefined && existing.metadata.uid !== uid)
      throw new KubeApiError(409, 'uid precondition failed', 'Conflict');
    return this.remove(type, namespace, name);
  }

  #record(r: RecordedRequest): void {
    this.requests.push(r);
    const i = this.#failures.findIndex(
      (f) => f.verb === r.verb && (f.kind === undefined || f.kind === r.kind),
    );
    if (i >= 0) {
      const [f] = this.#failures.splice(i, 1);
      if (f !== undefined) throw f.error;
    }
  }

  #key(type: ResourceType, namespace: string | undefined, name: string): string {
    return `${apiVersionOf(type)}/${type.kind}/${namespace ?? ''}/${name}`;
  }

  #specChanged(a: KubeObject, b: KubeObject): boolean {
    const strip = (o: KubeObject) => {
      const { metadata: _m, status: _s, ...rest } = o;
      return canonicalJson(rest);
    };
    return strip(a) !== strip(b);
  }

  #store(
    type: ResourceType,
    key: string,
    obj: KubeObject,
    eventType: 'ADDED' | 'MODIFIED',
  ): KubeObject {
    obj.metadata.resourceVersion = String(++this.#rv);
    if (!countsGenerations(type)) delete obj.metadata.generation;
    const previous = this.#objects.get(key);
    this.#objects.set(key, obj);
    this.#emit(
      type,
      { type: eventType, object: clone(obj) },
      previous === undefined ? undefined : clone(previous),
    );
    return obj;
  }

  /**
   * Hands one event to a watcher as the API server would through a label selector: an object
   * entering the selection is ADDED, one leaving it DELETED (as it was when it last matched).
   */
  #deliver(
    w: Watcher,
    type: ResourceType,
    event: WatchEvent,
    previous: KubeObject | undefined,
  ): void {
    if (w.type.kind !== type.kind || w.type.group !== type.group) return;
    if (w.namespace !== undefined && w.namespace !== event.object.metadata.namespace) return;
    const now = w.selects(event.object.metadata.labels);
    const before = previous !== undefined && w.selects(previous.metadata.labels);
    if (event.type !== 'MODIFIED' || (now && before)) {
      if (now) w.onEvent(clone(event));
    } else if (now) {
      w.onEvent({ type: 'ADDED', object: clone(event.object) });
    } else if (before) {
      w.onEvent({
        type: 'DELETED',
        object: {
          ...clone(previous),
          metadata: {
            ...clone(previous.metadata),
            resourceVersion: event.object.metadata.resourceVersion,
          },
        },
      });
    }
  }

  #emit(type: ResourceType, event: WatchEvent, previous?: KubeObject): void {
    this.#history.push({
      rv: Number(event.object.metadata.resourceVersion),
      type,
      event: clone(event),
      previous,
    });
    if (this.#history.length > 20_000) this.#history.splice(0, 10_000);
    for (const w of this.#watchers) this.#deliver(w, type, event, previous);
  }
}
