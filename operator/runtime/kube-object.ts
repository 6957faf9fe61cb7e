// The shape of any Kubernetes object as the operator sees it: typed metadata, everything else
// `unknown` until a zod schema (operator/api) or a narrow accessor has looked at it.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** One entry of metadata.managedFields: who set which fields, by which kind of request. */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  /** Set for a subresource's fields, e.g. 'status'. */
  subresource?: string;
  [field: string]: unknown;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** `namespace/name` (or `name` for cluster-scoped objects): the work-queue key of an object. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace === undefined || namespace === '' ? name : `${namespace}/${name}`;
}

export function keyOf(obj: KubeObject): string {
  return objectKey(obj.metadata.namespace, obj.metadata.name);
}

export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const slash = key.indexOf('/');
  return slash < 0
    ? { namespace: undefined, name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** Narrows an unknown field to a plain object (for reading status of children without casts). */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
