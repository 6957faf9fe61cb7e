// Auth-server configuration and the shapes of its three files.
//
// Contract with the operator: the client registry, the users file and the signing keys file are
// JSON documents the operator writes into Secrets; the schemas below are their single source.
// The operator should call `hashClientSecret` and `generateSigningJwks` (re-exported here) rather
// than reimplement the formats. Everything is parsed once at start (env) or on every change of
// the file (registry, users, keys), with messages naming the full path of each bad field.
import { z } from 'zod';
import { NAMESPACE } from '../tenancy/tenant-keys.ts';
import { isSecureRedirectUri } from './redirect-uri.ts';

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
    .refine((v) => !v.includes('?') && !v.includes('#'), 'the issuer has no query or fragment (RFC 8414 section 2)')
    .transform((v) => v.replace(/\/+$/, ''))
    .default('http://localhost:9000')
    .describe('Issuer identifier: the public base URL of this server, no trailing slash'),
  AUTH_CLIENTS_FILE: z.string().min(1).describe('Path of the client registry JSON (clientRegistrySchema)'),
  AUTH_USERS_FILE: z.string().min(1).describe('Path of the users JSON (usersFileSchema)'),
  AUTH_KEYS_FILE: z
    .string()
    .min(1)
    .optional()
    .describe('Path of the private signing JWKS (signingKeysFileSchema); unset: one key generated at start'),
  AUTH_SIGNING_ALG: z.enum(['ES256', 'RS256']).default('ES256').describe('Algorithm of the key generated at start'),
  REDIS_URL: z.string().min(1).optional().describe('Codes, consents, refresh tokens and throttles in Redis when set'),
  AUTH_NAMESPACE: z
    .string()
    .regex(NAMESPACE, 'a namespace name (RFC 1123 label)')
    .default('default')
    .describe('Namespace this server serves: every Redis key starts with portcullis:auth:<namespace>:, so servers of two namespaces sharing a Redis never see each other\'s state'),
  AUTH_AUDIENCE: z
    .string()
    .min(1)
    .default('urn:portcullis:user-service')
    .describe('aud claim of access tokens: the resource server (user service) identifier'),
  AUTH_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(10).max(86_400).default(300),
  AUTH_REFRESH_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(90 * 86_400).default(86_400),
  AUTH_REFRESH_FAMILY_MAX_AGE_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(365 * 86_400)
    .default(30 * 86_400)
    .describe('A sign-in\'s refresh tokens end this long after the sign-in, however often they rotate (s)'),
  AUTH_REFRESH_REUSE_GRACE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(60)
    .default(3)
    .describe('A refresh token presented again this soon after its rotation gets the same successor (replicas refreshing at once); later it revokes the family; 0: always revokes (s)'),
  AUTH_SIGN_IN_SESSIONS: boolish
    .default(false)
    .describe('Keep a sign-in session across the clients of this server (a user signed in for one is not asked for a password by the next); off: every authorization signs in'),
  AUTH_SESSION_IDLE_SECONDS: z.coerce.number().int().min(60).max(7 * 86_400).default(1800).describe('A sign-in session ends after this long unused (s)'),
  AUTH_SESSION_MAX_AGE_SECONDS: z.coerce.number().int().min(60).max(30 * 86_400).default(43_200).describe('A sign-in session ends this long after the sign-in, however used (s)'),
  AUTH_CODE_TTL_SECONDS: z.coerce.number().int().min(1).max(600).default(60).describe('Authorization code lifetime (s)'),
  AUTH_INTERACTION_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(30)
    .max(3600)
    .default(600)
    .describe('How long a sign-in/consent page stays usable (s)'),
  AUTH_SIGNIN_USER_ADDRESS_BURST: z.coerce.number().int().min(1).default(10).describe('Sign-in attempts per username and client address, burst'),
  AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: z.coerce.number().int().min(1).default(6).describe('Per username and client address, refill'),
  AUTH_SIGNIN_USER_BURST: z.coerce.number().int().min(1).default(100).describe('Sign-in attempts per username from all addresses, burst'),
  AUTH_SIGNIN_USER_PER_MINUTE: z.coerce.number().int().min(1).default(30).describe('Per username from all addresses, refill'),
  AUTH_SIGNIN_ADDRESS_BURST: z.coerce.number().int().min(1).default(30).describe('Sign-in attempts per client address, burst'),
  AUTH_SIGNIN_ADDRESS_PER_MINUTE: z.coerce.number().int().min(1).default(30).describe('Per client address, refill'),
  AUTH_PASSWORD_HASH_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .optional()
    .describe('Password hashes computed at once; unset: one less than the CPU cores, at most the libuv pool size minus 2'),
  AUTH_PASSWORD_HASH_QUEUE: z.coerce.number().int().min(0).max(10_000).default(16).describe('Sign-ins waiting for a hash slot before more are refused with 503'),
  AUTH_PASSWORD_HASH_PER_ADDRESS: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(2)
    .describe("Sign-ins of one client address hashing or waiting at once; more from it are refused with 503 (the address's fair share of the gate)"),
  AUTH_CLIENT_AUTH_FAILURES_BURST: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(10)
    .describe('Wrong client secrets allowed in a row per client and address (per replica) before 429'),
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
  AUTH_FILE_CHECK_MS: z.coerce.number().int().min(50).max(60_000).default(1000).describe('How often files are re-checked (ms)'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});
export type AuthServerConfig = z.infer<typeof authServerConfigSchema>;

/** Scope token syntax (RFC 6749 section 3.3): printable ASCII except space, quote and backslash. */
export const scopeTokenSchema = z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, 'not a scope token');

export const grantTypeSchema = z.enum(['authorization_code', 'refresh_token']);
export const tokenEndpointAuthMethodSchema = z.enum(['client_secret_basic', 'client_secret_post', 'none']);

/** `sha256:<base64url of SHA-256(secret)>`; see docs/adr/0003 for why a fast hash suffices. */
export const clientSecretHashSchema = z.string().regex(/^sha256:[A-Za-z0-9_-]{43}$/, 'expected sha256:<base64url>');

/**
 * An absolute redirect URI without fragment (RFC 6749 section 3.1.2), compared by exact string
 * match (a loopback IP one on any port: redirect-uri.ts).
 */
const redirectUriSchema = z
  .url({ protocol: /^https?$/ })
  .refine((v) => !v.includes('#'), 'a redirect URI has no fragment');

export const INSECURE_REDIRECT_URI_RULE =
  'http is allowed only for loopback hosts (localhost, 127.0.0.0/8, [::1]); use https, or set allow_insecure_redirect_uris';

export const registeredClientSchema = z
  .object({
    client_id: z.string().regex(/^[A-Za-z0-9._~-]{1,128}$/, 'client_id: 1-128 unreserved characters'),
    client_secret_hash: clientSecretHashSchema.optional(),
    display_name: z.string().min(1).max(200).describe('Shown on the consent page'),
    redirect_uris: z.array(redirectUriSchema).min(1),
    scopes: z.array(scopeTokenSchema).min(1).describe('Scopes the client may request'),
    grant_types: z.array(grantTypeSchema).min(1).default(['authorization_code', 'refresh_token']),
    token_endpoint_auth_method: tokenEndpointAuthMethodSchema.default('client_secret_basic'),
    token_endpoint_auth_methods: z
      .array(z.enum(['client_secret_basic', 'client_secret_post']))
      .min(1)
      .max(2)
      .optional()
      .describe('Every method the client may authenticate with (token_endpoint_auth_method among them); unset: that one only'),
    skip_consent: z
      .boolean()
      .optional()
      .describe('First-party client: no consent page unless the request says prompt=consent'),
    allow_insecure_redirect_uris: z
      .boolean()
      .optional()
      .describe('Accept http redirect URIs to hosts other than loopback (codes then cross the network in clear text)'),
    post_logout_redirect_uris: z
      .array(redirectUriSchema)
      .max(16)
      .optional()
      .describe('Where RP-initiated logout may send the browser back to (exact match)'),
    resource_server: z
      .boolean()
      .optional()
      .describe('May introspect tokens issued to any client; other clients only learn about their own tokens'),
  })
  .strict()
  .refine((c) => (c.token_endpoint_auth_method === 'none') === (c.client_secret_hash === undefined), {
    message: 'client_secret_hash is required for confidential clients and absent for public ones (method none)',
    path: ['client_secret_hash'],
  })
  .refine((c) => c.token_endpoint_auth_methods === undefined || (c.token_endpoint_auth_methods as readonly string[]).includes(c.token_endpoint_auth_method), {
    message: 'token_endpoint_auth_methods lists token_endpoint_auth_method (and a public client has no other method)',
    path: ['token_endpoint_auth_methods'],
  })
  .refine((c) => c.resource_server !== true || c.token_endpoint_auth_method !== 'none', {
    message: 'a resource server authenticates to introspect: it cannot be a public client (method none)',
    path: ['resource_server'],
  })
  .superRefine((c, ctx) => {
    if (c.allow_insecure_redirect_uris === true) return;
    c.redirect_uris.forEach((uri, i) => {
      if (!isSecureRedirectUri(uri)) {
        ctx.addIssue({ code: 'custom', path: ['redirect_uris', i], message: INSECURE_REDIRECT_URI_RULE });
      }
    });
    (c.post_logout_redirect_uris ?? []).forEach((uri, i) => {
      if (!isSecureRedirectUri(uri)) ctx.addIssue({ code: 'custom', path: ['post_logout_redirect_uris', i], message: INSECURE_REDIRECT_URI_RULE });
    });
  });
export type RegisteredClient = z.infer<typeof registeredClientSchema>;

export const clientRegistrySchema = z
  .object({ clients: z.array(registeredClientSchema) })
  .strict()
  .refine((r) => new Set(r.clients.map((c) => c.client_id)).size === r.clients.length, 'client_id values are unique');
export type ClientRegistry = z.infer<typeof clientRegistrySchema>;

/**
 * A client whose id is the access tokens' audience would accept access tokens as id_tokens of
 * its own (both are JWTs from one key ring, aud = that id): such a registry is refused.
 */
export function clientIdsBesideAudience(registry: ClientRegistry, audience: string, what: string): ClientRegistry {
  const index = registry.clients.findIndex((c) => c.client_id === audience);
  if (index >= 0) throw new Error(`${what}: clients.${index}.client_id: equals the access-token audience (AUTH_AUDIENCE ${audience}); id_tokens and access tokens would be interchangeable`);
  return registry;
}

/** PHC string `$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt b64>$<hash b64>` (see passwords.ts). */
export const passwordHashSchema = z
  .string()
  .regex(/^\$scrypt\$ln=\d{1,2},r=\d{1,2},p=\d{1,2}\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}$/, 'expected $scrypt$ln=..,r=..,p=..$salt$hash');

/** Profile claims released to clients by scope: `profile` and `email` (OpenID Connect claim names). */
export const profileClaimsSchema = z
  .object({
    name: z.string().max(200).optional(),
    given_name: z.string().max(200).optional(),
    family_name: z.string().max(200).optional(),
    preferred_username: z.string().max(200).optional(),
    picture: z.url().optional(),
    locale: z.string().max(35).optional(),
    zoneinfo: z.string().max(64).optional(),
    email: z.email().optional(),
    email_verified: z.boolean().optional(),
  })
  .strict();
export type ProfileClaims = z.infer<typeof profileClaimsSchema>;

export const userRecordSchema = z
  .object({
    username: z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, 'username: 1-64 of A-Z a-z 0-9 . _ @ -'),
    password_hash: passwordHashSchema,
    profile: profileClaimsSchema.default({}),
    groups: z
      .array(z.string().regex(/^[\x21-\x7E]{1,128}$/, 'a group: 1-128 printable ASCII characters, no space'))
      .max(256)
      .optional()
      .describe('Group names, released by the groups scope (the groups claim)'),
  })
  .strict();
export type UserRecord = z.infer<typeof userRecordSchema>;

export const usersFileSchema = z
  .object({ users: z.array(userRecordSchema) })
  .strict()
  .refine((f) => new Set(f.users.map((u) => u.username)).size === f.users.length, 'usernames are unique');
export type UsersFile = z.infer<typeof usersFileSchema>;

const kid = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'kid: 1-64 of A-Z a-z 0-9 . _ -');
const b64u = z.string().regex(/^[A-Za-z0-9_-]+$/, 'base64url');

export const ecPrivateJwkSchema = z
  .object({ kty: z.literal('EC'), crv: z.literal('P-256'), alg: z.literal('ES256'), kid, use: z.literal('sig').default('sig'), x: b64u, y: b64u, d: b64u })
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
export const signingJwkSchema = z.discriminatedUnion('kty', [ecPrivateJwkSchema, rsaPrivateJwkSchema]);
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

function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
}

/** Parses the environment; throws an Error naming each invalid field. */
export function loadAuthServerConfig(env: Record<string, string | undefined>): AuthServerConfig {
  const result = authServerConfigSchema.safeParse(env);
  if (!result.success) throw new Error(`invalid auth-server configuration: ${describeIssues(result.error)}`);
  if (result.data.AUTH_METRICS_PORT !== 0 && result.data.AUTH_METRICS_PORT === result.data.PORT) {
    throw new Error(`invalid auth-server configuration: AUTH_METRICS_PORT: must differ from PORT (${result.data.PORT}), or be 0 for no metrics port`);
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
