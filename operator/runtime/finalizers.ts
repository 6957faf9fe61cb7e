// The operator's finalizers, set and let go of with server-side apply under the controller's own
// field manager (other managers' finalizers stay). Letting go reads the object live first:
// a reconcile working from a cache that still shows the finalizer (another worker already let go
// and the object is gone) must not apply, because an apply creates a missing object; the API
// server refuses a route without spec, and a kind without required fields would come back empty.
import { isNotFound } from './errors.ts';
import type { KubeClient } from './kube-client.ts';
import type { KubeObject } from './kube-object.ts';
import { resourceTypeOf } from './resource-types.ts';

const finalizersApplied = (raw: KubeObject, finalizers: string[]): KubeObject => ({
  apiVersion: raw.apiVersion,
  kind: raw.kind,
  metadata: { name: raw.metadata.name, namespace: raw.metadata.namespace, finalizers },
});

/** Puts `finalizer` on the object for `fieldManager`, unless the object holds it already. */
export async function holdFinalizer(
  client: KubeClient,
  raw: KubeObject,
  finalizer: string,
  fieldManager: string,
): Promise<void> {
  if ((raw.metadata.finalizers ?? []).includes(finalizer)) return;
  await client.apply(finalizersApplied(raw, [finalizer]), undefined, fieldManager);
}

/** Applies the object's finalizers as [] for `fieldManager`, only while the live object still holds `finalizer`. */
export async function releaseFinalizer(
  client: KubeClient,
  raw: KubeObject,
  finalizer: string,
  fieldManager: string,
): Promise<void> {
  const type = resourceTypeOf(raw.apiVersion, raw.kind);
  const { name, namespace } = raw.metadata;
  const holds = async (): Promise<boolean> =>
    ((await client.get(type, namespace, name))?.metadata.finalizers ?? []).includes(finalizer);
  if (!(await holds())) return;
  try {
    await client.apply(finalizersApplied(raw, []), undefined, fieldManager);
  } catch (err) {
    // Gone between the read and the apply (the apply then tried to create it): nothing to let go of.
    if (isNotFound(err) || !(await holds())) return;
    throw err;
  }
}
