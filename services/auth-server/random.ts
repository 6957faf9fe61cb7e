// Random identifiers and their storage hashes. Codes, refresh tokens and CSRF tokens carry
// 256 bits from the CSPRNG; stores keep only SHA-256 hashes of codes and refresh tokens.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 256-bit random value, base64url (43 characters). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function sha256(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url');
}

/** Constant-time string equality (lengths may leak, contents do not). */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
