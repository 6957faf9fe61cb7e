// Bucket keys without client keys in them: a take's key (route, rule, user id or API key) becomes
// an HMAC-SHA256 under a secret, 128 bits in base64url (22 characters), so a copy of Redis holds no
// user id or API key. The sidecar keys the HMAC with a secret derived from its Redis password:
// with the operator's per-namespace Redis users, a secret only that namespace and the operator know.
import { createHmac } from 'node:crypto';

/** The HMAC key a sidecar derives from its Redis password ('' when it has none). */
export function keyHashSecretOf(redisPassword: string): string {
  return createHmac('sha256', redisPassword).update('portcullis bucket keys').digest('base64url');
}

/** A take key's stand-in in the bucket's Redis key. */
export function hashBucketKey(secret: string, key: string): string {
  return createHmac('sha256', secret).update(key).digest('base64url').slice(0, 22);
}

/**
 * Keys whose hash is remembered at most: a client's requests come in runs, and a lookup costs
 * ~0.2 µs where the HMAC costs ~2 µs (measured on this project's 2-core VM). ~150 bytes of heap
 * each, so at most ~1.5 MiB.
 */
const REMEMBERED_HASHES = 10_000;

/** hashBucketKey under one secret, remembering the latest keys' hashes (the oldest forgotten first). */
export function createBucketKeyHasher(
  secret: string,
  remembered = REMEMBERED_HASHES,
): (key: string) => string {
  const known = new Map<string, string>();
  return (key) => {
    const hit = known.get(key);
    if (hit !== undefined) return hit;
    const hash = hashBucketKey(secret, key);
    if (known.size >= remembered) known.delete(known.keys().next().value as string);
    known.set(key, hash);
    return hash;
  };
}
