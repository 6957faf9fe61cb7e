// Auth-server configuration, and the parsing of its three files.
//
// Contract with the operator: the client registry, the users file and the signing keys file are
// JSON documents the operator writes into Secrets; their schemas (client-registry.ts,
// users-file.ts, signing-keys-file.ts) are their single source. The operator should call
// `hashClientSecret` and `generateSigningJwks` (re-exported here) rather than reimplement the
// formats. Everything is parsed once at start (env) or on every change of the file (registry,
// users, keys), with messages naming the full path of each bad field.
import { z } from 'zod';
import { NAMESPACE } from '../tenancy/tenant-keys.ts';

export { hashClientSecret } from './client-secret.ts';
export { generateSigningJwks } from './signing-keys.ts';
export { hashPassword } from './passwords.ts';

const boolish = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Environment of the auth server (main.ts passes process.env in; nothing else reads it). */
export const authServerConfigSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(9000).describe('TCP port to listen on'),
  HOST: z.string().min(1).default('0.0.0.0').describe('Address to bind'),
  AUTH_ISSUER: z
    .url({ protocol: /^https?$/ })
    .refine(
      (v) => !v.includes('?') && !v.includes('#'),
      'the issuer has no query or fragment (RFC 8414 section 2)',
    )
    .transform((v) => v.replace(/\/+$/, ''))
    .default('http://localhost:9000')
    .describe('Issuer identifier: the public base URL of this server, no trailing slash'),
  AUTH_CLIENTS_FILE: z
    .string()
    .min(1)
    .describe('Path of the client registry JSON (clientRegistrySchema)'),
  AUTH_USERS_FILE: z.string().min(1).describe('Path of the users JSON (usersFileSchema)'),
  AUTH_KEYS_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Path of the private signing JWKS (signingKeysFileSchema); unset: one key generated at start',
    ),
  AUTH_SIGNING_ALG: z
    .enum(['ES256', 'RS256'])
    .default('ES256')
    .describe('Algorithm of the key generated at start'),
  REDIS_URL: z
    .string()
    .min(1)
    .optional()
    .describe('Codes, consents, refresh tokens and throttles in Redis when set'),
  AUTH_NAMESPACE: z
    .string()
    .regex(NAMESPACE, 'a namespace name (RFC 1123 label)')
    .default('default')
    .describe(
      "Namespace this server serves: every Redis key starts with portcullis:auth:<namespace>:, so servers of two namespaces sharing a Redis never see each other's state",
    ),
  AUTH_AUDIENCE: z
    .string()
    .min(1)
    .default('urn:portcullis:user-service')
    .describe('aud claim of access tokens: the resource server (user service) identifier'),
  AUTH_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(10).max(86_400).default(300),
  AUTH_REFRESH_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(90 * 86_400)
    .default(86_400),
  AUTH_REFRESH_FAMILY_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(365 * 86_400)
    .default(30 * 86_400)
    .describe(
      "A sign-in's refresh tokens end this long after the sign-in, however often they rotate (s)",
    ),
  AUTH_REFRESH_REUSE_GRACE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(60)
    .default(3)
    .describe(
      'A refresh token presented again this soon after its rotation gets the same successor (replicas refreshing at once); later it revokes the family; 0: always revokes (s)',
    ),
  AUTH_SIGN_IN_SESSIONS: boolish
    .default(false)
    .describe(
      'Keep a sign-in session across the clients of this server (a user signed in for one is not asked for a password by the next); off: every authorization signs in',
    ),
  AUTH_SESSION_IDLE_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(7 * 86_400)
    .default(1800)
    .describe('A sign-in session ends after this long unused (s)'),
  AUTH_SESSION_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(30 * 86_400)
    .default(43_200)
    .describe('A sign-in session ends this long after the sign-in, however used (s)'),
  AUTH_CODE_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(600)
    .default(60)
    .describe('Authorization code lifetime (s)'),
  AUTH_INTERACTION_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(30)
    .max(3600)
    .default(600)
    .describe('How long a sign-in/consent page stays usable (s)'),
  AUTH_SIGNIN_USER_ADDRESS_BURST: z.coerce
    .number()
    .int()
    .min(1)
    .default(10)
    .describe('Sign-in attempts per username and client address, burst'),
  AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(1)
    .default(6)
    .describe('Per username and client address, refill'),
  AUTH_SIGNIN_USER_BURST: z.coerce
    .number()
    .int()
    .min(1)
    .default(100)
    .describe('Sign-in attempts per username from all addresses, burst'),
  AUTH_SIGNIN_USER_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(1)
    .default(30)
    .describe('Per username from all addresses, refill'),
  AUTH_SIGNIN_ADDRESS_BURST: z.coerce
    .number()
    .int()
    .min(1)
    .default(30)
    .describe('Sign-in attempts per client address, burst'),
  AUTH_SIGNIN_ADDRESS_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(1)
    .default(30)
    .describe('Per client address, refill'),
  AUTH_PASSWORD_HASH_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .optional()
    .describe(
      'Password hashes computed at once; unset: one less than the CPU cores, at most the libuv pool size minus 2',
    ),
  AUTH_PASSWORD_HASH_QUEUE: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(16)
    .describe('Sign-ins waiting for a hash slot before more are refused with 503'),
  AUTH_PASSWORD_HASH_PER_ADDRESS: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(2)
    .describe(
      "Sign-ins of one client address hashing or waiting at once; more from it are refused with 503 (the address's fair share of the gate)",
    ),
  AUTH_CLIENT_AUTH_FAILURES_BURST: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(10)
    .describe(
      'Wrong client secrets allowed in a row per client and address (per replica) before 429',
    ),
  AUTH_CLIENT_AUTH_FAILURE_REFILL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3600)
    .default(6)
    .describe('One more wrong client secret allowed every this many seconds (s)'),
  AUTH_METRICS_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(9090)
    .describe('Port of GET /metrics (Prometheus), apart from the public port; 0: no metrics port'),
  AUTH_TRUST_PROXY: boolish.default(false).describe('Take the client address from X-Forwarded-For'),
  AUTH_FILE_CHECK_MS: z.coerce
    .number()
    .int()
    .min(50)
    .max(60_000)
    .default(1000)
    .describe('How often files are re-checked (ms)'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});
export type AuthServerConfig = z.infer<typeof authServerConfigSchema>;

function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
}

/** Parses the environment; throws an Error naming each invalid field. */
export function loadAuthServerConfig(env: Record<string, string | undefined>): AuthServerConfig {
  const result = authServerConfigSchema.safeParse(env);
  if (!result.success)
    throw new Error(`invalid auth-server configuration: ${describeIssues(result.error)}`);
  if (result.data.AUTH_METRICS_PORT !== 0 && result.data.AUTH_METRICS_PORT === result.data.PORT) {
    throw new Error(
      `invalid auth-server configuration: AUTH_METRICS_PORT: must differ from PORT (${result.data.PORT}), or be 0 for no metrics port`,
    );
  }
  return result.data;
}

/** Parses one of the three files' JSON text with its schema; the error names the file and each field. */
export function parseJsonFile<T>(schema: z.ZodType<T>, text: string, what: string): T {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${what}: not JSON (${(err as Error).message})`, { cause: err });
  }
  const result = schema.safeParse(json);
  if (!result.success) throw new Error(`${what}: ${describeIssues(result.error)}`);
  return result.data;
}
