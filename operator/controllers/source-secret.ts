// A Secret the operator copies from (its Redis URLs, in the release namespace), read live: the
// caches hold Secrets as metadata only.
import { secretKeyData, type SecretKeyRef } from '../resources/shared/redis-url-secret.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { resourceTypes } from '../runtime/resource-types.ts';

/** The base64 value of `ref.key`, or undefined when the Secret or the key is missing or empty. */
export async function readSecretKey(
  client: KubeClient,
  ref: SecretKeyRef,
): Promise<string | undefined> {
  return secretKeyData(await client.get(resourceTypes.secret, ref.namespace, ref.name), ref.key);
}
