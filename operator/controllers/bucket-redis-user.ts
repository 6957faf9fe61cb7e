// The namespace's bucket user on the operator's default Redis (operator/redis/) is shared by its
// RateLimitRoutes and the decision services of its RateLimitPolicies: both reconcilers release it
// through this one function, so neither takes it from under the other.
import { releaseNamespaceRedisUser, type TenantRedisUsers } from '../redis/tenant-redis-users.ts';
import type { ResourceSettings } from '../resources/shared/settings.ts';
import type { Informer } from '../runtime/informer.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { asRecord, type KubeObject } from '../runtime/kube-object.ts';
import { readSecretKey } from './source-secret.ts';

export interface BucketRedisUserDeps {
  redisUsers?: TenantRedisUsers | undefined;
  settings: Pick<ResourceSettings, 'defaultRedisSecret'>;
  client: KubeClient;
  caches: { routes: Informer; policies: Informer };
}

/** Names no Redis of its own and is not being deleted: its pods run on the namespace's user. An invalid one counts too (its pods still run). */
function onDefaultRedis(o: KubeObject): boolean {
  return o.metadata.deletionTimestamp === undefined && asRecord(o['spec'])?.['redis'] === undefined;
}

/**
 * No route nor policy of the namespace left on the default Redis: its user there goes. Called when
 * one of them is deleted or moves to a Redis of its own. The count is taken after the last await,
 * so one another worker set the user up for meanwhile keeps it (the DELUSER queues behind that
 * SETUSER on the one admin connection).
 */
export async function releaseUnusedBucketUser(
  d: BucketRedisUserDeps,
  namespace: string | undefined,
): Promise<void> {
  const source = d.settings.defaultRedisSecret;
  if (d.redisUsers === undefined || source === undefined || namespace === undefined) return;
  const adminUrlData = await readSecretKey(d.client, source);
  if (adminUrlData === undefined) return;
  const inUse =
    d.caches.routes.list(namespace).some(onDefaultRedis) ||
    d.caches.policies.list(namespace).some(onDefaultRedis);
  if (!inUse) await releaseNamespaceRedisUser(d.redisUsers, adminUrlData, namespace, 'bucket');
}
