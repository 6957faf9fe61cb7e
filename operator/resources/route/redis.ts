// Which Secret key a route's sidecar reads its Redis URL from, if any: the route's own
// spec.redis.secretRef, else (a route naming no Redis) the operator's copy of its default Redis
// Secret (shared/redis-url-secret.ts).
import type { RateLimitRoute } from '../../api/index.ts';
import { REDIS_URL_KEY, routeRedisSecretName } from '../shared/redis-url-secret.ts';
import type { ResourceSettings } from '../shared/settings.ts';

/** The route names no Redis and the operator's default is a Secret: the route gets a copy of it. */
export function usesDefaultRedisSecret(
  route: RateLimitRoute,
  settings: Pick<ResourceSettings, 'defaultRedisSecret'>,
): boolean {
  return route.spec.redis === undefined && settings.defaultRedisSecret !== undefined;
}

/** The Secret (in the route's namespace) and key mounted as the sidecar's redis.urlFile; undefined: none. */
export function routeRedisSecretRef(
  route: RateLimitRoute,
  settings: Pick<ResourceSettings, 'defaultRedisSecret'>,
): { name: string; key: string } | undefined {
  const own = route.spec.redis?.secretRef;
  if (own !== undefined) return own;
  return usesDefaultRedisSecret(route, settings)
    ? { name: routeRedisSecretName(route.metadata.name), key: REDIS_URL_KEY }
    : undefined;
}
