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
