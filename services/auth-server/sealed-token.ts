// Values sealed for someone else to hold (JWE dir + A256GCM under the key ring's current sealing
// key): interactions carried by the browser until sign-in, and the reuse grace window's refresh
// token successor kept in the store, which so never holds a usable token in clear. The content
// type keeps one kind of sealed value from being opened as another.
import { CompactEncrypt, compactDecrypt, decodeProtectedHeader } from 'jose';
import type { KeyRing } from './key-ring.ts';

/** Content type of a sealed refresh token (sealed interactions carry none, as they always have). */
export const REFRESH_TOKEN_CTY = 'portcullis-refresh-token';

export async function seal(keys: KeyRing, plaintext: string, cty?: string): Promise<string> {
  const [current] = keys.sealingKeys();
  if (current === undefined) throw new Error('no sealing key');
  const header = {
    alg: 'dir',
    enc: 'A256GCM',
    kid: current.kid,
    ...(cty === undefined ? {} : { cty }),
  };
  return new CompactEncrypt(new TextEncoder().encode(plaintext))
    .setProtectedHeader(header)
    .encrypt(current.key);
}

/** The plaintext, or undefined when it was not sealed with this content type by a key this server still holds. */
export async function unseal(
  keys: KeyRing,
  sealed: string,
  cty?: string,
): Promise<string | undefined> {
  try {
    const header = decodeProtectedHeader(sealed);
    const key = keys.sealingKeys().find((k) => k.kid === header.kid);
    if (key === undefined || header.alg !== 'dir' || header.enc !== 'A256GCM' || header.cty !== cty)
      return undefined;
    const { plaintext } = await compactDecrypt(sealed, key.key, {
      keyManagementAlgorithms: ['dir'],
      contentEncryptionAlgorithms: ['A256GCM'],
    });
    return new TextDecoder().decode(plaintext);
  } catch {
    return undefined;
  }
}
