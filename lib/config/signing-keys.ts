// Signing-key files (signingKeysFileSchema): generation and rotation for the operator and for the
// embedded default. A rotation prepends a new key: it signs from then on, and the older keys stay
// published in the JWKS until the operator removes them (after the access-token lifetime).
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import {
  signingJwkSchema,
  signingKeysFileSchema,
  type SigningKeysFile,
} from './signing-keys-file.ts';

export interface GenerateSigningJwksOptions {
  /** ES256 (default) or RS256 (2048-bit). */
  readonly alg?: 'ES256' | 'RS256';
  /** The current file: its keys are kept after the new one. */
  readonly existing?: SigningKeysFile;
  /** Keep at most this many keys in total (the oldest are dropped). Default: keep all. */
  readonly keep?: number;
}

/** A private JWKS with one new key first, followed by the keys of `existing`. */
export async function generateSigningJwks(
  options: GenerateSigningJwksOptions = {},
): Promise<SigningKeysFile> {
  const alg = options.alg ?? 'ES256';
  const { privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'RS256' ? { modulusLength: 2048 } : {}),
  });
  const jwk = await exportJWK(privateKey);
  const key = signingJwkSchema.parse({
    ...jwk,
    alg,
    kid: `${alg.toLowerCase()}-${randomBytes(9).toString('base64url')}`,
    use: 'sig',
  });
  const keys = [key, ...(options.existing?.keys ?? [])];
  return signingKeysFileSchema.parse({
    keys: options.keep === undefined ? keys : keys.slice(0, Math.max(1, options.keep)),
  });
}
