// What the resource builders need from the operator's settings (operator/config.ts): images,
// ports and defaults. Pure data, so that every builder stays a pure function of (CR, settings).
import { type ContainerResources, DEFAULT_AUTH_SERVER_RESOURCES } from './container-resources.ts';
import type { SecretKeyRef } from './redis-url-secret.ts';
import { DEFAULT_SIDECAR_RESOURCES } from './sidecar-heap.ts';

/**
 * aud of the access tokens the operator's auth servers issue (their AUTH_AUDIENCE), and so what a
 * jwt-keyed RateLimitRoute expects when it names no audience.
 */
export const AUTH_SERVER_AUDIENCE = 'urn:portcullis:user-service';
/** Path of the auth server's JWKS under its issuer URL (its metadata's jwks_uri). */
export const AUTH_SERVER_JWKS_PATH = '/jwks.json';

export interface ResourceSettings {
  sidecarImage: string;
  authServerImage: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** Port the sidecar proxy listens on inside the pod (moved up by one while it collides with the target's). */
  sidecarPort: number;
  /** Port of the sidecar's /healthz, /readyz, /metrics. */
  sidecarAdminPort: number;
  /** Port of the Services in front of the sidecars and the auth server. */
  servicePort: number;
  /** Used when a RateLimitRoute names no Redis; undefined: buckets in each sidecar's memory. */
  defaultRedisUrl: string | undefined;
  /**
   * Redis of the auth servers: security state that must never be evicted, so ideally apart from
   * the limiter's buckets. undefined: each auth server keeps it in memory (one replica).
   */
  authRedisUrl: string | undefined;
  /**
   * Instead of defaultRedisUrl: the Secret key (in the operator's namespace) holding the URL, which
   * may carry a password. Copied into an owned Secret beside each route that names no Redis, whose
   * sidecar reads it as redis.urlFile; the URL never appears in a ConfigMap.
   */
  defaultRedisSecret?: SecretKeyRef | undefined;
  /** Instead of authRedisUrl: copied beside each auth server, whose REDIS_URL comes from it (secretKeyRef). */
  authRedisSecret?: SecretKeyRef | undefined;
  authServerPort: number;
  authServerReplicas: number;
  /** Issuer URL of the auth server; `{namespace}` is replaced by the namespace it runs in. */
  issuerUrl: string;
  /** Secret (in each namespace with OAuthClients) holding the users file. */
  usersSecretName: string;
  usersSecretKey: string;
  /** Access-token lifetime, s: the auth server's setting and how long a retired signing key stays published. */
  accessTokenTtlSeconds: number;
  /** The auth servers' refresh-token reuse grace window, s (0: strict rotation). */
  refreshReuseGraceSeconds: number;
  /** The auth servers' sign-in sessions across clients; absent: off. */
  signInSessions?: { readonly idleSeconds: number; readonly maxAgeSeconds: number };
  /** A new signing key after this long, ms (0 = never rotate on a timer). */
  signingKeyRotationMs: number;
  /**
   * A NetworkPolicy per route admitting ingress only on the sidecar's ports (none: the target's port
   * is reachable too), and one per auth server admitting only its HTTP and metrics ports.
   */
  routeNetworkPolicy: boolean;
  /**
   * Host names a route's own jwt issuer may publish its keys at (its sidecars fetch them); empty:
   * any. The namespace's auth server is always allowed.
   */
  jwksAllowedHosts: readonly string[];
  /** PriorityClass of route and auth-server pods (a route's spec.priorityClassName wins); undefined: none. */
  priorityClassName: string | undefined;
  /** The sidecar container's resources unless a route sets spec.sidecar.resources. */
  sidecarResources: ContainerResources;
  /** The auth-server container's resources. */
  authServerResources: ContainerResources;
}

export const defaultResourceSettings: ResourceSettings = {
  sidecarImage: 'ghcr.io/portcullis/sidecar:latest',
  authServerImage: 'ghcr.io/portcullis/auth-server:latest',
  imagePullPolicy: 'IfNotPresent',
  sidecarPort: 8080,
  sidecarAdminPort: 9090,
  servicePort: 80,
  defaultRedisUrl: undefined,
  authRedisUrl: undefined,
  authServerPort: 9000,
  authServerReplicas: 1,
  issuerUrl: 'http://portcullis-auth-server.{namespace}.svc',
  usersSecretName: 'portcullis-auth-users',
  usersSecretKey: 'users.json',
  accessTokenTtlSeconds: 300,
  refreshReuseGraceSeconds: 3,
  signingKeyRotationMs: 30 * 24 * 3600_000,
  routeNetworkPolicy: true,
  jwksAllowedHosts: [],
  priorityClassName: undefined,
  sidecarResources: DEFAULT_SIDECAR_RESOURCES,
  authServerResources: DEFAULT_AUTH_SERVER_RESOURCES,
};
