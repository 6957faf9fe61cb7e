// The auth server's client registry (AUTH_CLIENTS_FILE): the JSON document the operator writes
// into a Secret, one entry per OAuthClient; this schema is its single source. A confidential
// client's secret is stored as hashClientSecret (client-secret.ts) makes it.
import { z } from 'zod';
import { isSecureRedirectUri } from './redirect-uri.ts';

/** Scope token syntax (RFC 6749 section 3.3): printable ASCII except space, quote and backslash. */
export const scopeTokenSchema = z
  .string()
  .regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, 'not a scope token');

export const grantTypeSchema = z.enum(['authorization_code', 'refresh_token']);
export const tokenEndpointAuthMethodSchema = z.enum([
  'client_secret_basic',
  'client_secret_post',
  'none',
]);

/** `sha256:<base64url of SHA-256(secret)>`; see docs/adr/0003 for why a fast hash suffices. */
export const clientSecretHashSchema = z
  .string()
  .regex(/^sha256:[A-Za-z0-9_-]{43}$/, 'expected sha256:<base64url>');

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
    client_id: z
      .string()
      .regex(/^[A-Za-z0-9._~-]{1,128}$/, 'client_id: 1-128 unreserved characters'),
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
      .describe(
        'Every method the client may authenticate with (token_endpoint_auth_method among them); unset: that one only',
      ),
    skip_consent: z
      .boolean()
      .optional()
      .describe('First-party client: no consent page unless the request says prompt=consent'),
    allow_insecure_redirect_uris: z
      .boolean()
      .optional()
      .describe(
        'Accept http redirect URIs to hosts other than loopback (codes then cross the network in clear text)',
      ),
    post_logout_redirect_uris: z
      .array(redirectUriSchema)
      .max(16)
      .optional()
      .describe('Where RP-initiated logout may send the browser back to (exact match)'),
    resource_server: z
      .boolean()
      .optional()
      .describe(
        'May introspect tokens issued to any client; other clients only learn about their own tokens',
      ),
  })
  .strict()
  .refine(
    (c) => (c.token_endpoint_auth_method === 'none') === (c.client_secret_hash === undefined),
    {
      message:
        'client_secret_hash is required for confidential clients and absent for public ones (method none)',
      path: ['client_secret_hash'],
    },
  )
  .refine(
    (c) =>
      c.token_endpoint_auth_methods === undefined ||
      (c.token_endpoint_auth_methods as readonly string[]).includes(c.token_endpoint_auth_method),
    {
      message:
        'token_endpoint_auth_methods lists token_endpoint_auth_method (and a public client has no other method)',
      path: ['token_endpoint_auth_methods'],
    },
  )
  .refine((c) => c.resource_server !== true || c.token_endpoint_auth_method !== 'none', {
    message:
      'a resource server authenticates to introspect: it cannot be a public client (method none)',
    path: ['resource_server'],
  })
  .superRefine((c, ctx) => {
    if (c.allow_insecure_redirect_uris === true) return;
    c.redirect_uris.forEach((uri, i) => {
      if (!isSecureRedirectUri(uri)) {
        ctx.addIssue({
          code: 'custom',
          path: ['redirect_uris', i],
          message: INSECURE_REDIRECT_URI_RULE,
        });
      }
    });
    (c.post_logout_redirect_uris ?? []).forEach((uri, i) => {
      if (!isSecureRedirectUri(uri))
        ctx.addIssue({
          code: 'custom',
          path: ['post_logout_redirect_uris', i],
          message: INSECURE_REDIRECT_URI_RULE,
        });
    });
  });
export type RegisteredClient = z.infer<typeof registeredClientSchema>;

export const clientRegistrySchema = z
  .object({ clients: z.array(registeredClientSchema) })
  .strict()
  .refine(
    (r) => new Set(r.clients.map((c) => c.client_id)).size === r.clients.length,
    'client_id values are unique',
  );
export type ClientRegistry = z.infer<typeof clientRegistrySchema>;

/**
 * A client whose id is the access tokens' audience would accept access tokens as id_tokens of
 * its own (both are JWTs from one key ring, aud = that id): such a registry is refused.
 */
export function clientIdsBesideAudience(
  registry: ClientRegistry,
  audience: string,
  what: string,
): ClientRegistry {
  const index = registry.clients.findIndex((c) => c.client_id === audience);
  if (index >= 0)
    throw new Error(
      `${what}: clients.${index}.client_id: equals the access-token audience (AUTH_AUDIENCE ${audience}); id_tokens and access tokens would be interchangeable`,
    );
  return registry;
}
