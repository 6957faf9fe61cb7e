// RateLimitRoute -> the sidecar's config file in a ConfigMap. The file is validated with the
// sidecar's own schema (lib/config/sidecar.ts) before it is written, so the operator can never hand a
// sidecar a config it would reject.
import type { V1ConfigMap } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import {
  WORKLOAD_RULE,
  type Limit,
  type LimiterKey,
  type RateLimitRoute,
  type Rule,
} from '../../api/index.ts';
import {
  ConfigError,
  parseSidecarConfig,
  type SidecarConfigInput,
} from '../../../lib/config/sidecar.ts';
import { InvalidSpecError } from '../../runtime/errors.ts';
import type { KubeObject } from '../../runtime/kube-object.ts';
import { issuerFor } from '../auth/deployment.ts';
import { AUTH_SERVER_NAME } from '../auth/names.ts';
import { controllerRef, routeLabels } from '../shared/metadata.ts';
import { routeConfigMapName, SIDECAR_CONFIG_KEY, SIDECAR_REDIS_URL_FILE } from './names.ts';
import { routeSidecarPorts } from './ports.ts';
import { usesDefaultRedisSecret } from './redis.ts';
import { bucketKeyPrefix } from '../../../lib/tenancy/tenant-keys.ts';
import {
  AUTH_SERVER_AUDIENCE,
  AUTH_SERVER_JWKS_PATH,
  type ResourceSettings,
} from '../shared/settings.ts';

type SidecarLimiter = SidecarConfigInput['limiter'];
type SidecarRule = NonNullable<SidecarLimiter['rules']>[number];

/** Drops the keys whose value is undefined: absent in the route stays absent in the file. */
function present<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function limitFor(limit: Limit): SidecarRule['limits'][number] {
  return present({
    replenishRate: limit.replenishRate,
    burstCapacity: limit.burstCapacity,
    requestedTokens: limit.requestedTokens,
  });
}

function ruleFor(rule: Rule): SidecarRule {
  return present({
    name: rule.name,
    path: rule.path,
    methods: rule.methods,
    limits: rule.limits.map(limitFor),
    enforce: rule.enforce,
  });
}

/**
 * jwt key: what the route names, else the auth server the operator runs in the route's namespace
 * (its issuer, its JWKS from its in-cluster Service, its audience). The claim defaults in the sidecar.
 */
export function jwtKeyFor(
  key: LimiterKey,
  namespace: string,
  settings: ResourceSettings,
): NonNullable<SidecarLimiter['jwt']> {
  const own = key.issuer;
  // Without an issuer of its own, the namespace's auth server: tokens name its public issuer URL,
  // but the sidecar fetches the keys from its Service inside the cluster, which needs no ingress
  // and works whatever address the issuer is published at.
  const issuer = own?.url ?? issuerFor(namespace, settings);
  const jwksUrl =
    own === undefined
      ? `http://${AUTH_SERVER_NAME}.${namespace}.svc${settings.servicePort === 80 ? '' : `:${settings.servicePort}`}${AUTH_SERVER_JWKS_PATH}`
      : (own.jwksUrl ?? `${own.url.replace(/\/+$/, '')}${AUTH_SERVER_JWKS_PATH}`);
  // A key publisher the route names is held to the platform's list (the namespace's own auth server is not).
  const allowed =
    own !== undefined && settings.jwksAllowedHosts.length > 0
      ? [...settings.jwksAllowedHosts]
      : undefined;
  return present({
    issuer,
    audience: key.audience ?? AUTH_SERVER_AUDIENCE,
    jwksUrl,
    claim: key.claim,
    jwksAllowedHosts: allowed,
  });
}

function limiterFor(route: RateLimitRoute, settings: ResourceSettings): SidecarLimiter {
  const { limiter } = route.spec;
  return present({
    replenishRate: limiter.replenishRate,
    burstCapacity: limiter.burstCapacity,
    requestedTokens: limiter.requestedTokens,
    rules: limiter.rules?.map(ruleFor),
    unmatched: limiter.unmatched,
    enforce: limiter.enforce,
    key: limiter.key.source,
    keyHeader: limiter.keyHeader,
    jwt:
      limiter.key.source === 'jwt'
        ? jwtKeyFor(limiter.key, route.metadata.namespace ?? 'default', settings)
        : undefined,
    onMissingKey: { status: limiter.onMissingKey.status },
    onStoreError: limiter.onStoreError,
  });
}

/**
 * Where the sidecar forwards: the target (or spec.targetRef) container beside it over localhost, or with
 * spec.upstream the team's Service through cluster DNS (the route's namespace).
 */
export function upstreamUrl(route: RateLimitRoute): string {
  const { target, upstream, targetRef } = route.spec;
  const local = target?.port ?? targetRef?.port;
  if (local !== undefined) return `http://127.0.0.1:${local}`;
  if (upstream !== undefined)
    return `http://${upstream.service.name}.${route.metadata.namespace ?? 'default'}.svc:${upstream.service.port}`;
  throw new InvalidSpecError(WORKLOAD_RULE);
}

/** The sidecar config for a route (input form: defaults left to the sidecar). */
export function sidecarConfigFor(
  route: RateLimitRoute,
  settings: ResourceSettings,
): SidecarConfigInput {
  const { spec } = route;
  const ports = routeSidecarPorts(route, settings);
  const redisUrl =
    spec.redis?.url ?? (spec.redis === undefined ? settings.defaultRedisUrl : undefined);
  const fromSecret = spec.redis?.secretRef !== undefined || usesDefaultRedisSecret(route, settings);
  const config: SidecarConfigInput = {
    listen: { host: '0.0.0.0', port: ports.proxy },
    admin: { host: '0.0.0.0', port: ports.admin },
    upstream: { url: upstreamUrl(route) },
    route: present({
      id: route.metadata.name,
      path: spec.path,
      mergeSlashes: spec.mergeSlashes,
      caseInsensitivePaths: spec.caseInsensitivePaths,
    }),
    limiter: limiterFor(route, settings),
  };
  // Bucket keys carry the namespace: a same-named route elsewhere never shares a bucket, and the
  // namespace's Redis user may touch only these keys (lib/tenancy).
  const keyPrefix = bucketKeyPrefix(route.metadata.namespace ?? 'default');
  // Client keys (user ids, API keys) are stored hashed: a copy of Redis reveals none.
  if (redisUrl !== undefined) config.redis = { url: redisUrl, keyPrefix, hashKeys: true };
  // A URL from a Secret (it may carry a password): the Deployment mounts the key at this path.
  if (fromSecret) config.redis = { urlFile: SIDECAR_REDIS_URL_FILE, keyPrefix, hashKeys: true };
  return config;
}

/** Renders and validates the sidecar config file (YAML). Throws InvalidSpecError naming the bad field. */
export function renderSidecarConfig(route: RateLimitRoute, settings: ResourceSettings): string {
  const config = sidecarConfigFor(route, settings);
  try {
    parseSidecarConfig(config);
  } catch (err) {
    if (err instanceof ConfigError)
      throw new InvalidSpecError(`the sidecar would reject this route: ${err.message}`);
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
      labels: routeLabels(name, 'sidecar-config'),
      ownerReferences: [controllerRef(route)],
    },
    data: { [SIDECAR_CONFIG_KEY]: renderSidecarConfig(route, settings) },
  } satisfies V1ConfigMap;
}
