// Apply-if-different: server-side apply of a desired object, skipped when the cached live object
// already matches. The desired object is stamped with a hash of itself
// (portcullis.dev/applied-hash): a field we stop setting changes the hash, so the apply that
// removes it is not skipped, while a subset check alone would call the old object "matching".
import type { Informer } from './informer.ts';
import type { KubeClient } from './kube-client.ts';
import { asRecord, type KubeObject } from './kube-object.ts';
import type { OperatorMetrics } from './metrics.ts';
import { contentHash, isSubset } from './compare.ts';
import { resourceTypeOf } from './resource-types.ts';

export const APPLIED_HASH_ANNOTATION = 'portcullis.dev/applied-hash';

export interface ApplyOutcome {
  object: KubeObject;
  changed: boolean;
}

/** Returns desired with the applied-hash annotation set. */
export function stampHash(desired: KubeObject): KubeObject {
  const { [APPLIED_HASH_ANNOTATION]: _old, ...annotations } = desired.metadata.annotations ?? {};
  const hash = contentHash({ ...desired, metadata: { ...desired.metadata, annotations } });
  return { ...desired, metadata: { ...desired.metadata, annotations: { ...annotations, [APPLIED_HASH_ANNOTATION]: hash } } };
}

/**
 * Whether live already is desired. A metadata-only copy is judged by its metadata, which holds the
 * applied hash of the whole desired object: a change of what the operator wants is applied. An
 * edit of the contents by someone else leaves the hash as it was; the Applier catches that by the
 * resourceVersion it wrote (see `apply`).
 */
export function matches(desired: KubeObject, live: KubeObject | undefined, metadataOnly = false): boolean {
  if (live === undefined) return false;
  return metadataOnly ? isSubset(desired.metadata, live.metadata) : isSubset(desired, live);
}

/** What the operator last wrote of one object: the resourceVersion its apply returned, and the one it replaced. */
interface Written {
  readonly mine: string | undefined;
  readonly before: string | undefined;
}

const writtenKey = (o: KubeObject): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export class Applier {
  readonly #client: KubeClient;
  readonly #metrics: OperatorMetrics | undefined;
  /**
   * Objects cached as metadata only (Secrets, ConfigMaps) whose contents the cache cannot compare:
   * the resourceVersion each apply returned. A cached copy at another version (and not the one the
   * apply replaced, which a lagging cache may still hold) was written by someone else, so it is
   * applied again. Empty after a restart: an edit made while the operator was down waits for the
   * next change of what it wants.
   */
  readonly #written = new Map<string, Written>();

  constructor(client: KubeClient, metrics?: OperatorMetrics) {
    this.#client = client;
    this.#metrics = metrics;
  }

  /** Applies desired unless the informer's cached copy already matches it. */
  async apply(desired: KubeObject, cache: Informer): Promise<ApplyOutcome> {
    const stamped = stampHash(desired);
    const live = cache.get(stamped.metadata.namespace, stamped.metadata.name);
    if (live !== undefined && matches(stamped, live, cache.metadataOnly) && !(cache.metadataOnly && this.#editedByOthers(live))) {
      this.#metrics?.appliesSkipped.inc({ kind: desired.kind });
      return { object: live, changed: false };
    }
    const applied = await this.#client.apply(stamped);
    if (cache.metadataOnly) this.#written.set(writtenKey(stamped), { mine: applied.metadata.resourceVersion, before: live?.metadata.resourceVersion });
    return { object: applied, changed: true };
  }

  #editedByOthers(live: KubeObject): boolean {
    const written = this.#written.get(writtenKey(live));
    const version = live.metadata.resourceVersion;
    return written !== undefined && version !== written.mine && version !== written.before;
  }

  /** Creates (POST) the stamped object: fails with 409 if it exists, so it never overwrites. */
  async create(desired: KubeObject): Promise<KubeObject> {
    return this.#client.create(stampHash(desired));
  }

  /** Applies the stamped object without looking at any cache (the caller knows it differs). */
  async force(desired: KubeObject): Promise<KubeObject> {
    return this.#client.apply(stampHash(desired));
  }

  /** Forgets what was written of an object that is gone (deleted by anyone, the garbage collector included). */
  forget(gone: KubeObject): void {
    this.#written.delete(writtenKey(gone));
  }

  /** Deletes a child the desired state no longer has (uid as a precondition: never a newer namesake). */
  async remove(live: KubeObject): Promise<boolean> {
    const type = resourceTypeOf(live.apiVersion, live.kind);
    this.#written.delete(writtenKey(live));
    return this.#client.delete(type, live.metadata.namespace, live.metadata.name, live.metadata.uid);
  }

  /** Applies the status subresource unless the live status already contains the desired one. */
  async applyStatus(owner: KubeObject, status: Record<string, unknown>): Promise<boolean> {
    if (isSubset(status, asRecord(owner['status']) ?? {})) {
      this.#metrics?.appliesSkipped.inc({ kind: `${owner.kind}/status` });
      return false;
    }
    await this.#client.apply(
      { apiVersion: owner.apiVersion, kind: owner.kind, metadata: { name: owner.metadata.name, namespace: owner.metadata.namespace }, status },
      'status',
    );
    return true;
  }
}
