// OAuthClient: one registered client application. The operator generates
// its client id and secret into a Secret and adds it to the auth server's client registry.
import { z } from 'zod';
import { SECURE_REDIRECT_URI_PATTERN, isSecureRedirectUri } from '../../lib/config/redirect-uri.ts';
import {
  API_VERSION,
  conditionsSchema,
  dnsSubdomain,
  objectMetaSchema,
  observedGenerationSchema,
  type CrdSource,
} from './common.ts';

export const REDIRECT_URI_RULE =
  'redirect URI must be an absolute http(s) URL with a host and without a fragment (RFC 6749 section 3.1.2)';
export const INSECURE_REDIRECT_URI_RULE =
  'http redirect URIs are allowed only for loopback hosts (localhost, 127.0.0.0/8, [::1]); use https, or set allowInsecureRedirectUris';

/** Absolute http(s) URL, no fragment: compared by exact string match (a loopback IP one on any port). */
export const redirectUriSchema = z
  .string()
  .min(1)
  .max(2048)
  .refine((s) => {
    if (!/^https?:\/\//.test(s) || s.includes('#')) return false;
    try {
      return new URL(s).hostname !== '';
    } catch {
      return false;
    }
  }, REDIRECT_URI_RULE)
  .meta({
    // No `format: uri`: the API server's uri check runs first and its message ("must be of type
    // uri") says less than this rule's, which then never runs.
    'x-kubernetes-validations': [
      {
        rule: "isURL(self) && (url(self).getScheme() == 'https' || url(self).getScheme() == 'http') && url(self).getHostname() != '' && !self.contains('#')",
        message: REDIRECT_URI_RULE,
      },
    ],
  })
  .describe('An absolute redirect URI, e.g. https://app.example.com/callback (exact match only).');

/** RFC 6749 section 3.3 scope-token. */
export const scopeSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(
    /^[\x21\x23-\x5B\x5D-\x7E]+$/,
    'must be an RFC 6749 scope token (no spaces, quotes or backslashes)',
  );

export const AUTH_METHODS_RULE = 'tokenEndpointAuthMethods must include tokenEndpointAuthMethod';
export const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;
export const TOKEN_ENDPOINT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post'] as const;

export const oauthClientSpecSchema = z
  .strictObject({
    displayName: z
      .string()
      .min(1)
      .max(100)
      .describe('Name of the application shown on the consent page.'),
    redirectUris: z
      .array(redirectUriSchema)
      .min(1)
      .max(16)
      .meta({ 'x-kubernetes-list-type': 'set' })
      .describe(
        'Allowed redirect URIs (absolute http(s), no fragment); the redirect_uri of a request must equal one of them exactly.',
      ),
    scopes: z
      .array(scopeSchema)
      .max(32)
      .default(['profile'])
      .meta({ 'x-kubernetes-list-type': 'set' })
      .describe('Scopes the client may request, e.g. [profile, email].'),
    grantTypes: z
      .array(z.enum(GRANT_TYPES))
      .min(1)
      .max(2)
      .default(['authorization_code'])
      .meta({ 'x-kubernetes-list-type': 'set' })
      .describe(
        'Grant types the client may use: authorization_code, and refresh_token to receive refresh tokens.',
      ),
    tokenEndpointAuthMethod: z
      .enum(TOKEN_ENDPOINT_AUTH_METHODS)
      .default('client_secret_basic')
      .describe(
        'How the client authenticates at the token endpoint: client_secret_basic (HTTP Basic) or client_secret_post (in the body).',
      ),
    tokenEndpointAuthMethods: z
      .array(z.enum(TOKEN_ENDPOINT_AUTH_METHODS))
      .min(1)
      .max(2)
      .optional()
      .meta({ 'x-kubernetes-list-type': 'set' })
      .describe(
        'Every method the client may authenticate with at the token endpoint, for a client whose replicas or libraries differ; must include tokenEndpointAuthMethod. Unset: tokenEndpointAuthMethod only.',
      ),
    postLogoutRedirectUris: z
      .array(redirectUriSchema)
      .max(16)
      .optional()
      .meta({ 'x-kubernetes-list-type': 'set' })
      .describe(
        'Where the auth server may send the browser after RP-initiated logout (post_logout_redirect_uri, exact match).',
      ),
    skipConsent: z
      .boolean()
      .optional()
      .describe(
        'First-party client: users are not asked for consent (unless the request says prompt=consent). Default off.',
      ),
    allowInsecureRedirectUris: z
      .boolean()
      .optional()
      .describe(
        'Accept http redirect URIs to hosts other than loopback (localhost, 127.0.0.0/8, [::1]). Authorization codes then cross the network unencrypted: for test set-ups only.',
      ),
    resourceServer: z
      .boolean()
      .optional()
      .describe(
        'This client is a resource server: it may introspect tokens issued to any client. Other clients learn only about tokens issued to themselves.',
      ),
  })
  // Written twice, as the other cross-field rules: zod for the operator, CEL for the API server.
  .refine(
    (s) =>
      s.allowInsecureRedirectUris === true ||
      [...s.redirectUris, ...(s.postLogoutRedirectUris ?? [])].every(isSecureRedirectUri),
    {
      message: INSECURE_REDIRECT_URI_RULE,
      path: ['redirectUris'],
    },
  )
  .refine(
    (s) =>
      s.tokenEndpointAuthMethods === undefined ||
      s.tokenEndpointAuthMethods.includes(s.tokenEndpointAuthMethod),
    {
      message: AUTH_METHODS_RULE,
      path: ['tokenEndpointAuthMethods'],
    },
  )
  .meta({
    'x-kubernetes-validations': [
      {
        rule: '!has(self.tokenEndpointAuthMethods) || self.tokenEndpointAuthMethod in self.tokenEndpointAuthMethods',
        message: AUTH_METHODS_RULE,
        fieldPath: '.tokenEndpointAuthMethods',
      },
      {
        rule: `(has(self.allowInsecureRedirectUris) && self.allowInsecureRedirectUris) || (self.redirectUris.all(u, u.matches(r'${SECURE_REDIRECT_URI_PATTERN}')) && (!has(self.postLogoutRedirectUris) || self.postLogoutRedirectUris.all(u, u.matches(r'${SECURE_REDIRECT_URI_PATTERN}'))))`,
        message: INSECURE_REDIRECT_URI_RULE,
        fieldPath: '.redirectUris',
      },
    ],
  })
  .describe('Desired state of the client registration.');
export type OAuthClientSpec = z.infer<typeof oauthClientSpecSchema>;

export const oauthClientStatusSchema = z
  .strictObject({
    observedGeneration: observedGenerationSchema.optional(),
    conditions: conditionsSchema.optional(),
    clientId: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe('The generated client_id (also in the Secret).'),
    secretName: dnsSubdomain
      .optional()
      .describe('Name of the Secret holding client_id and client_secret.'),
  })
  .describe('Observed state of the client, written by the operator.');
export type OAuthClientStatus = z.infer<typeof oauthClientStatusSchema>;

export const OAUTH_CLIENT_KIND = 'OAuthClient';
export const OAUTH_CLIENT_PLURAL = 'oauthclients';
/** Keys of the generated client Secret. */
export const CLIENT_ID_KEY = 'client_id';
export const CLIENT_SECRET_KEY = 'client_secret';

/** The name becomes label values of its children (app.kubernetes.io/instance, portcullis.dev/oauth-client), which hold 63 characters at most. */
export const OAUTH_CLIENT_NAME_MAX = 63;
export const OAUTH_CLIENT_NAME_RULE = `name must be at most ${OAUTH_CLIENT_NAME_MAX} characters: it is a label value of the client's Secret`;

export const oauthClientSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(OAUTH_CLIENT_KIND),
  metadata: objectMetaSchema.refine((m) => m.name.length <= OAUTH_CLIENT_NAME_MAX, {
    message: OAUTH_CLIENT_NAME_RULE,
    path: ['name'],
  }),
  spec: oauthClientSpecSchema,
  status: oauthClientStatusSchema.optional(),
});
export type OAuthClient = z.infer<typeof oauthClientSchema>;

export const oauthClientCrd: CrdSource = {
  kind: OAUTH_CLIENT_KIND,
  plural: OAUTH_CLIENT_PLURAL,
  singular: 'oauthclient',
  shortNames: ['oac'],
  categories: ['portcullis'],
  description:
    'OAuthClient registers a client application with the Portcullis authorization server. The operator generates its client id and secret into a Secret (keys client_id, client_secret) and adds it to the client registry.',
  spec: oauthClientSpecSchema,
  status: oauthClientStatusSchema,
  rootValidations: [
    {
      rule: `self.metadata.name.size() <= ${OAUTH_CLIENT_NAME_MAX}`,
      message: OAUTH_CLIENT_NAME_RULE,
    },
  ],
  printerColumns: [
    {
      name: 'Display',
      type: 'string',
      jsonPath: '.spec.displayName',
      description: 'Shown on the consent page',
    },
    {
      name: 'Client ID',
      type: 'string',
      jsonPath: '.status.clientId',
      description: 'Generated client_id',
    },
    {
      name: 'Secret',
      type: 'string',
      jsonPath: '.status.secretName',
      description: 'Secret with client_id and client_secret',
    },
    {
      name: 'Status',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].status',
      description: 'Ready condition',
    },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Age' },
  ],
};
