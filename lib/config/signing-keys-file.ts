// The auth server's signing keys file (AUTH_KEYS_FILE): the private JWKS the operator writes into a
// Secret (generateSigningJwks in signing-keys.ts makes it); this schema is its single source.
import { z } from 'zod';

const kid = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'kid: 1-64 of A-Z a-z 0-9 . _ -');
const b64u = z.string().regex(/^[A-Za-z0-9_-]+$/, 'base64url');

export const ecPrivateJwkSchema = z
  .object({
    kty: z.literal('EC'),
    crv: z.literal('P-256'),
    alg: z.literal('ES256'),
    kid,
    use: z.literal('sig').default('sig'),
    x: b64u,
    y: b64u,
    d: b64u,
  })
  .strict();
export const rsaPrivateJwkSchema = z
  .object({
    kty: z.literal('RSA'),
    alg: z.literal('RS256'),
    kid,
    use: z.literal('sig').default('sig'),
    n: b64u,
    e: b64u,
    d: b64u,
    p: b64u,
    q: b64u,
    dp: b64u,
    dq: b64u,
    qi: b64u,
  })
  .strict();
export const signingJwkSchema = z.discriminatedUnion('kty', [
  ecPrivateJwkSchema,
  rsaPrivateJwkSchema,
]);
export type SigningJwk = z.infer<typeof signingJwkSchema>;

/**
 * The private signing JWKS. The FIRST key signs new tokens; every key's public half is published
 * at the JWKS endpoint, so after a rotation (new key prepended) tokens signed with the old keys
 * still verify. The operator drops an old key once the access-token lifetime has passed.
 */
export const signingKeysFileSchema = z
  .object({ keys: z.array(signingJwkSchema).min(1) })
  .strict()
  .refine((f) => new Set(f.keys.map((k) => k.kid)).size === f.keys.length, 'kid values are unique');
export type SigningKeysFile = z.infer<typeof signingKeysFileSchema>;
