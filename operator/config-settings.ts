// What the operator's parts take from its parsed settings (operator/config.ts): the settings every
// resource is rendered with, and the leader election's identity and Lease namespace.
import { hostname } from 'node:os';
import type { OperatorConfig } from './config.ts';
import { parseSecretKeyRef } from './resources/shared/redis-url-secret.ts';
import type { ResourceSettings } from './resources/shared/settings.ts';

export function leaderIdentity(config: OperatorConfig): string {
  return config.POD_NAME ?? `${hostname()}-${process.pid}`;
}

export function leaseNamespace(config: OperatorConfig): string {
  return config.PORTCULLIS_LEADER_ELECTION_NAMESPACE ?? config.POD_NAMESPACE ?? 'default';
}

/** The auth servers' Redis: their own setting (URL or Secret), else the routes' default (URL or Secret). */
function authRedis(
  config: OperatorConfig,
  secretNamespace: string,
): Pick<ResourceSettings, 'authRedisUrl' | 'authRedisSecret'> {
  const secret = (v: string | undefined) =>
    v === undefined ? undefined : parseSecretKeyRef(v, secretNamespace);
  if (
    config.PORTCULLIS_AUTH_REDIS_URL !== undefined ||
    config.PORTCULLIS_AUTH_REDIS_SECRET !== undefined
  ) {
    return {
      authRedisUrl: config.PORTCULLIS_AUTH_REDIS_URL,
      authRedisSecret: secret(config.PORTCULLIS_AUTH_REDIS_SECRET),
    };
  }
  return {
    authRedisUrl: config.PORTCULLIS_DEFAULT_REDIS_URL,
    authRedisSecret: secret(config.PORTCULLIS_DEFAULT_REDIS_SECRET),
  };
}

export function resourceSettings(config: OperatorConfig): ResourceSettings {
  // The Redis Secrets live beside the operator (the chart's release namespace).
  const secretNamespace = config.POD_NAMESPACE ?? 'default';
  return {
    sidecarImage: config.PORTCULLIS_SIDECAR_IMAGE,
    authServerImage: config.PORTCULLIS_AUTH_SERVER_IMAGE,
    imagePullPolicy: config.PORTCULLIS_IMAGE_PULL_POLICY,
    sidecarPort: config.PORTCULLIS_SIDECAR_PORT,
    sidecarAdminPort: config.PORTCULLIS_SIDECAR_ADMIN_PORT,
    servicePort: config.PORTCULLIS_SERVICE_PORT,
    defaultRedisUrl: config.PORTCULLIS_DEFAULT_REDIS_URL,
    defaultRedisSecret:
      config.PORTCULLIS_DEFAULT_REDIS_SECRET === undefined
        ? undefined
        : parseSecretKeyRef(config.PORTCULLIS_DEFAULT_REDIS_SECRET, secretNamespace),
    ...authRedis(config, secretNamespace),
    authServerPort: config.PORTCULLIS_AUTH_SERVER_PORT,
    authServerReplicas: config.PORTCULLIS_AUTH_SERVER_REPLICAS,
    issuerUrl: config.PORTCULLIS_ISSUER_URL,
    usersSecretName: config.PORTCULLIS_USERS_SECRET,
    usersSecretKey: config.PORTCULLIS_USERS_SECRET_KEY,
    accessTokenTtlSeconds: config.PORTCULLIS_ACCESS_TOKEN_TTL_SECONDS,
    refreshReuseGraceSeconds: config.PORTCULLIS_REFRESH_REUSE_GRACE_SECONDS,
    ...(config.PORTCULLIS_SIGN_IN_SESSIONS
      ? {
          signInSessions: {
            idleSeconds: config.PORTCULLIS_SESSION_IDLE_SECONDS,
            maxAgeSeconds: config.PORTCULLIS_SESSION_MAX_AGE_SECONDS,
          },
        }
      : {}),
    signingKeyRotationMs: Math.round(config.PORTCULLIS_SIGNING_KEY_ROTATION_HOURS * 3600_000),
    routeNetworkPolicy: config.PORTCULLIS_ROUTE_NETWORK_POLICY,
    jwksAllowedHosts: config.PORTCULLIS_JWKS_ALLOWED_HOSTS,
    priorityClassName: config.PORTCULLIS_PRIORITY_CLASS_NAME,
    sidecarResources: config.PORTCULLIS_SIDECAR_RESOURCES,
    authServerResources: config.PORTCULLIS_AUTH_SERVER_RESOURCES,
  };
}
