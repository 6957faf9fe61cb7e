// Names of a RateLimitRoute's children. The Deployment, the Service (its name is the route id),
// the NetworkPolicy and the PodDisruptionBudget are named as the route itself.

/** spec.upstream: the policy over the upstream Service's pods. A dot, which no route name has, so no route's own policy is named so. */
export function routeUpstreamNetworkPolicyName(route: string): string {
  return `${route}.upstream`;
}

export function routeConfigMapName(route: string): string {
  return `${route}-sidecar`;
}

export const SIDECAR_CONFIG_KEY = 'config.yaml';
export const SIDECAR_CONFIG_DIR = '/etc/portcullis/sidecar';
export const SIDECAR_CONTAINER = 'sidecar';
/** spec.redis.secretRef: the Secret key is mounted (whole volume, not subPath, so a rotation reaches the pod) as this file. */
export const SIDECAR_REDIS_DIR = '/etc/portcullis/redis';
export const SIDECAR_REDIS_URL_FILE = `${SIDECAR_REDIS_DIR}/url`;
export const REDIS_URL_VOLUME = 'redis-url';
export const TARGET_CONTAINER = 'target';

/** A Service name must be a DNS-1035 label: at most 63 characters, no dots, starts with a letter. */
export function serviceNameProblem(name: string): string | undefined {
  return /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name)
    ? undefined
    : `the route name "${name}" is used as its Service name, which must be a DNS-1035 label (at most 63 characters of a-z, 0-9 and -, starting with a letter); rename the RateLimitRoute`;
}
