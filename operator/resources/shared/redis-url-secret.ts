// A Redis URL that may carry a password reaches the pods the operator renders only through a
// Secret, never a ConfigMap or a plain env value. The operator's setting names a Secret key in its
// own namespace (PORTCULLIS_DEFAULT_REDIS_SECRET, PORTCULLIS_AUTH_REDIS_SECRET), the admin URL;
// pods can only reference Secrets of their own namespace, so the operator writes an owned Secret
// beside each route (`<route>-redis`) and each auth server (`portcullis-auth-redis`) holding the URL
// of that namespace's own Redis user (operator/redis/), or with tenant users off a copy of the
// admin URL. It goes with its owner, and follows the source on every reconcile (at the latest on
// the periodic resync).
import type { V1Secret } from '@kubernetes/client-node';
import type { KubeObject } from '../../runtime/kube-object.ts';
import type { ResourceSettings } from './settings.ts';
import {
  authServerLabels,
  controllerRef,
  type Owner,
  routeLabels,
  sortedOwnerRefs,
} from './metadata.ts';

/** A Secret key holding a redis:// or rediss:// URL. */
export interface SecretKeyRef {
  namespace: string;
  name: string;
  key: string;
}

/** The key of the operator's copies. */
export const REDIS_URL_KEY = 'url';
/** The auth server's copy in its namespace (REDIS_URL from secretKeyRef). */
export const AUTH_REDIS_SECRET = 'portcullis-auth-redis';

export function routeRedisSecretName(route: string): string {
  return `${route}-redis`;
}

/** `name/key` (a setting) -> the reference in `namespace`; undefined when it is not of that form. */
export function parseSecretKeyRef(value: string, namespace: string): SecretKeyRef | undefined {
  const m = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)\/([-._a-zA-Z0-9]+)$/.exec(value);
  if (m?.[1] === undefined || m[3] === undefined || m[1].length > 253) return undefined;
  return { namespace, name: m[1], key: m[3] };
}

/** The URL's bytes, base64 as the source Secret holds them (copied as they are, never decoded into a log). */
export function secretKeyData(secret: KubeObject | undefined, key: string): string | undefined {
  const data = secret?.['data'];
  if (typeof data !== 'object' || data === null) return undefined;
  const value = (data as Record<string, unknown>)[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The route's copy: its sidecar mounts the key as redis.urlFile. */
export function routeRedisSecret(
  route: Owner & { metadata: { namespace?: string } },
  urlBase64: string,
): KubeObject {
  const name = route.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: routeRedisSecretName(name),
      namespace: route.metadata.namespace,
      labels: routeLabels(name, 'redis-url'),
      ownerReferences: [controllerRef(route)],
    },
    type: 'Opaque',
    data: { [REDIS_URL_KEY]: urlBase64 },
  } satisfies V1Secret;
}

/** The auth server's copy, owned (like its other Secrets) by every OAuthClient of the namespace. */
export function authRedisSecret(
  namespace: string,
  owners: readonly Owner[],
  urlBase64: string,
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: AUTH_REDIS_SECRET,
      namespace,
      labels: authServerLabels('redis-url'),
      ownerReferences: sortedOwnerRefs(owners),
    },
    type: 'Opaque',
    data: { [REDIS_URL_KEY]: urlBase64 },
  } satisfies V1Secret;
}

/** The Secret holding the auth servers' Redis URL, when it comes from one (not from a plain URL setting). */
export function authRedisSource(
  settings: Pick<ResourceSettings, 'authRedisUrl' | 'authRedisSecret'>,
): SecretKeyRef | undefined {
  return settings.authRedisUrl === undefined ? settings.authRedisSecret : undefined;
}
