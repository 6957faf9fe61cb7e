// Apply-if-different: server-side apply of a desired object, skipped when the cached live object
// already matches. The desired object is stamped with a hash of itself
// (portcullis.dev/applied-hash): a field we stop setting changes the hash, so the apply that
// removes it is not skipped, while a subset check alone would call the old object "matching".
//
// Each controller applies as its own field manager (the client it is given). Objects an older
// operator applied under another name (`formerManagers`) are handed over on their next reconcile:
// applied as the new manager first, so that it co-owns every field it wants, then a minimal object
// (apiVersion, kind, name, namespace) is applied as the former manager, which thereby gives up all
// its fields: those the new manager co-owns stay, those nobody wants any more are removed, and the
// former manager's entry leaves managedFields. Without the hand-over, a field the operator stops
// setting would stay for good, still owned by the former name.
import type { Informer } from './informer.ts';
import type { KubeClient } from './kube-client.ts';
import { asRecord, type KubeObject, type ManagedFieldsEntry } from './kube-object.ts';
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
  return {
    ...desired,
    metadata: {
      ...desired.metadata,
      annotations: { ...annotations, [APPLIED_HASH_ANNOTATION]: hash },
    },
  };
}

/**
 * Whether live already is desired. A metadata-only copy is judged by its metadata, which holds the
 * applied hash of the whole desired object: a change of what the operator wants is applied. An
 * edit of the contents by someone else leaves the hash as it was; the Applier catches that by the
 * resourceVersion it wrote (see `apply`).
 */
export function matches(
  desired: KubeObject,
  live: KubeObject | undefined,
  metadataOnly = false,
): boolean {
  if (live === undefined) return false;
  return metadataOnly ? isSubset(desired.metadata, live.metadata) : isSubset(desired, live);
}

/** What the operator last wrote of one object: the resourceVersion its apply returned, and the one it replaced. */
interface Written {
  readonly mine: string | undefined;
  readonly before: string | undefined;
}

const writtenKey = (o: KubeObject): string =>
  `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export interface ApplierOptions {
  /** Field managers whose applied fields this applier takes over (an older operator's single name). */
  formerManagers?: readonly string[];
}

/** The identity of an object, all a field manager applies to give up every field it owned. */
function minimal(o: KubeObject): KubeObject {
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: { name: o.metadata.name, namespace: o.metadata.namespace },
  };
}

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

  readonly #former: readonly string[];

  /** client: the controller's own (its default field manager is the one this applier writes as). */
  constructor(client: KubeClient, metrics?: OperatorMetrics, options: ApplierOptions = {}) {
    this.#client = client;
    this.#metrics = metrics;
    this.#former = options.formerManagers ?? [];
  }

  /** Applies desired unless the informer's cached copy already matches it (and owes no hand-over). */
  async apply(desired: KubeObject, cache: Informer): Promise<ApplyOutcome> {
    const stamped = stampHash(desired);
    const live = cache.get(stamped.metadata.namespace, stamped.metadata.name);
    const handOver = live !== undefined && this.#formerOf(live).length > 0;
    if (
      live !== undefined &&
      !handOver &&
      matches(stamped, live, cache.metadataOnly) &&
      !(cache.metadataOnly && this.#editedByOthers(live))
    ) {
      this.#metrics?.appliesSkipped.inc({ kind: desired.kind });
      return { object: live, changed: false };
    }
    const applied = await this.#handOver(await this.#client.apply(stamped));
    if (cache.metadataOnly)
      this.#written.set(writtenKey(stamped), {
        mine: applied.metadata.resourceVersion,
        before: live?.metadata.resourceVersion,
      });
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
    return this.#handOver(await this.#client.apply(stampHash(desired)));
  }

  /** The former managers that still hold applied fields of obj (of its main resource, or of `subresource`). */
  #formerOf(obj: KubeObject, subresource?: 'status'): string[] {
    const entries: ManagedFieldsEntry[] = obj.metadata.managedFields ?? [];
    return entries.flatMap((e) =>
      e.operation === 'Apply' &&
      (e.subresource ?? '') === (subresource ?? '') &&
      e.manager !== undefined &&
      this.#former.includes(e.manager)
        ? [e.manager]
        : [],
    );
  }

  /** Has each former manager still listed in applied's managedFields give up its fields; the object after. */
  async #handOver(applied: KubeObject, subresource?: 'status'): Promise<KubeObject> {
    let current = applied;
    for (const manager of this.#formerOf(applied, subresource))
      current = await this.#client.apply(minimal(applied), subresource, manager);
    return current;
  }

  /** Forgets what was written of an object that is gone (deleted by anyone, the garbage collector included). */
  forget(gone: KubeObject): void {
    this.#written.delete(writtenKey(gone));
  }

  /** Deletes a child the desired state no longer has (uid as a precondition: never a newer namesake). */
  async remove(live: KubeObject): Promise<boolean> {
    const type = resourceTypeOf(live.apiVersion, live.kind);
    this.#written.delete(writtenKey(live));
    return this.#client.delete(
      type,
      live.metadata.namespace,
      live.metadata.name,
      live.metadata.uid,
    );
  }

  /** Applies the status subresource unless the live status already contains the desired one (and owes no hand-over). */
  async applyStatus(owner: KubeObject, status: Record<string, unknown>): Promise<boolean> {
    if (
      this.#formerOf(owner, 'status').length === 0 &&
      isSubset(status, asRecord(owner['status']) ?? {})
    ) {
      this.#metrics?.appliesSkipped.inc({ kind: `${owner.kind}/status` });
      return false;
    }
    const applied = await this.#client.apply({ ...minimal(owner), status }, 'status');
    await this.#handOver(applied, 'status');
    return true;
  }
}
