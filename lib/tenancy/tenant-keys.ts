// Where each namespace's state lives in a shared Redis. Every key a tenant's programs write starts
// with its namespace (`portcullis:bucket:<ns>:`, `portcullis:auth:<ns>:`), so same-named routes,
// users or clients of two namespaces never meet, and a per-namespace Redis ACL user
// (tenant-acl.ts) can be held to exactly these prefixes. Namespace names are DNS labels (no `:`,
// no glob characters), so one namespace's prefix is never a prefix of another's.

export const BUCKET_KEY_ROOT = 'portcullis:bucket:';
export const AUTH_KEY_ROOT = 'portcullis:auth:';

/** A Kubernetes namespace name (RFC 1123 label). */
export const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function assertNamespace(namespace: string): void {
  if (!NAMESPACE.test(namespace))
    throw new RangeError(`not a namespace name: ${JSON.stringify(namespace)}`);
}

/** Prefix of the limiter's bucket keys of a namespace's routes. */
export function bucketKeyPrefix(namespace: string): string {
  assertNamespace(namespace);
  return `${BUCKET_KEY_ROOT}${namespace}:`;
}

/** Prefix of every key of a namespace's auth server (codes, refresh families, consents, throttles). */
export function authKeyPrefix(namespace: string): string {
  assertNamespace(namespace);
  return `${AUTH_KEY_ROOT}${namespace}:`;
}
