// A refresh token sealed for the store (JWE dir + A256GCM under the key ring's sealing key, as
// interactions are): the reuse grace window hands the same successor to every replica of a client
// that refreshed at once, without the store ever holding a usable token in clear.
import { CompactEncrypt, compactDecrypt, decodeProtectedHeader } from 'jose';
import type { KeyRing } from './key-ring.ts';

/** Content type that keeps a sealed token from being opened as anything else (and the reverse). */
const CTY = 'portcullis-refresh-token';

export async function sealToken(keys: KeyRing, token: string): Promise<string> {
  const [current] = keys.sealingKeys();
  if (current === undefined) throw new Error('no sealing key');
  return new CompactEncrypt(new TextEncoder().encode(token)).setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: current.kid, cty: CTY }).encrypt(current.key);
}

/** The token, or undefined when it was not sealed by a key this server still holds. */
export async function openToken(keys: KeyRing, sealed: string): Promise<string | undefined> {
  try {
    const { kid, cty } = decodeProtectedHeader(sealed);
    const key = keys.sealingKeys().find((k) => k.kid === kid);
    if (key === undefined || cty !== CTY) return undefined;
    const { plaintext } = await compactDecrypt(sealed, key.key, { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] });
    return new TextDecoder().decode(plaintext);
  } catch {
    return undefined;
  }
}
