// What an informer's cache keeps of an object: everything the operator reads, without the parts
// that cost the most memory.
import type { KubeObject, ObjectMeta } from './kube-object.ts';

/** kubectl apply's copy of the whole object, as large as the object itself. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * Drops what the operator never reads and what costs the most memory: kubectl's copy, and the
 * field sets of managedFields (only who manages the object is kept: the Applier migrates fields of
 * a field manager the operator no longer uses).
 */
export function trimForCache(obj: KubeObject): KubeObject {
  const annotations = obj.metadata.annotations;
  const lastApplied = annotations !== undefined && LAST_APPLIED in annotations;
  const managedFields = obj.metadata.managedFields;
  if (managedFields === undefined && !lastApplied) return obj;
  const { managedFields: _dropped, ...rest } = obj.metadata;
  const metadata: ObjectMeta = rest;
  if (managedFields !== undefined)
    metadata.managedFields = managedFields.map(({ manager, operation, subresource }) => ({
      manager,
      operation,
      ...(subresource === undefined ? {} : { subresource }),
    }));
  if (lastApplied) {
    const { [LAST_APPLIED]: _copy, ...rest } = annotations;
    metadata.annotations = rest;
  }
  return { ...obj, metadata };
}
