// RateLimitRoute -> the sidecar's config file in a ConfigMap. The file is validated with the
// sidecar's own schema (sidecar/config.ts) before it is written, so the operator can never hand a
// sidecar a config it would reject.
import { stringify } from 'yaml';
import type { RateLimitRoute } from '../api/index.ts';
import { ConfigError, parseSidecarConfig, type SidecarConfigInput } from '../../sidecar/config.ts';
import { InvalidSpecError } from '../runtime/errors.ts';
import type { KubeObject } from '../runtime/kube-object.ts';
import { baseLabels, controllerRef, ROUTE_LABEL } from './metadata.ts';
import { routeConfigMapName, SIDECAR_CONFIG_KEY, SIDECAR_REDIS_URL_FILE } from './route-names.ts';
import { sidecarPorts } from './route-ports.ts';
import type { ResourceSettings } from './settings.ts';

/** The sidecar config for a route (input form: defaults left to the sidecar). */
export function sidecarConfigFor(route: RateLimitRoute, settings: ResourceSettings): SidecarConfigInput {
  const { spec } = route;
  const ports = sidecarPorts(spec.target.port, settings);
  const redisUrl = spec.redis?.url ?? (spec.redis === undefined ? settings.defaultRedisUrl : undefined);
  const config: SidecarConfigInput = {
    listen: { host: '0.0.0.0', port: ports.proxy },
    admin: { host: '0.0.0.0', port: ports.admin },
    upstream: { url: `http://127.0.0.1:${spec.target.port}` },
    route: { id: route.metadata.name, path: spec.path },
    limiter: {
      replenishRate: spec.limiter.replenishRate,
      burstCapacity: spec.limiter.burstCapacity,
      requestedTokens: spec.limiter.requestedTokens,
      keyHeader: spec.limiter.keyHeader,
      onMissingKey: { status: spec.limiter.onMissingKey.status },
      onStoreError: spec.limiter.onStoreError,
    },
  };
  if (redisUrl !== undefined) config.redis = { url: redisUrl };
  // A URL from a Secret (it may carry a password): the Deployment mounts the key at this path.
  if (spec.redis?.secretRef !== undefined) config.redis = { urlFile: SIDECAR_REDIS_URL_FILE };
  return config;
}

/** Renders and validates the sidecar config file (YAML). Throws InvalidSpecError naming the bad field. */
export function renderSidecarConfig(route: RateLimitRoute, settings: ResourceSettings): string {
  const config = sidecarConfigFor(route, settings);
  try {
    parseSidecarConfig(config);
  } catch (err) {
    if (err instanceof ConfigError) throw new InvalidSpecError(`the sidecar would reject this route: ${err.message}`);
    throw err;
  }
  return stringify(config, { sortMapEntries: false });
}

export function routeConfigMap(route: RateLimitRoute, settings: ResourceSettings): KubeObject {
  const name = route.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: routeConfigMapName(name),
      namespace: route.metadata.namespace,
      labels: { ...baseLabels('portcullis-gateway', name, 'sidecar-config'), [ROUTE_LABEL]: name },
      ownerReferences: [controllerRef(route)],
    },
    data: { [SIDECAR_CONFIG_KEY]: renderSidecarConfig(route, settings) },
  };
}
