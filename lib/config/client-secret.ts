// Client secrets: the operator generates 256-bit random secrets and stores only their hash in the
// registry. A fast hash is enough for secrets with 256 bits of entropy (docs/adr/0003); the
// comparison is constant-time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** `sha256:<base64url(SHA-256(secret))>`: the registry's client_secret_hash format. */
export function hashClientSecret(secret: string): string {
  return `sha256:${createHash('sha256').update(secret, 'utf8').digest('base64url')}`;
}

/** A fresh 256-bit client secret, base64url (43 characters). */
export function generateClientSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Constant-time check of a presented secret against a stored `sha256:` hash. */
export function verifyClientSecret(presented: string, storedHash: string): boolean {
  const expected = Buffer.from(storedHash, 'utf8');
  const actual = Buffer.from(hashClientSecret(presented), 'utf8');
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
