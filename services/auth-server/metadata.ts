// The server's metadata: one document served at both RFC 8414's
// /.well-known/oauth-authorization-server and OpenID Connect Discovery's
// /.well-known/openid-configuration, so the two can never disagree.
import type { AuthContext } from './context.ts';
import { PROMPTS } from './oidc-request.ts';
import { RELEASABLE_CLAIMS, STANDARD_SCOPES } from './scopes.ts';

/** Claims an id_token can carry besides the user claims the scopes release. */
const TOKEN_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'azp', 'at_hash'];

export function serverMetadata(ctx: AuthContext): Record<string, unknown> {
  const base = ctx.settings.issuer;
  return {
    issuer: base,
    authorization_endpoint: `${base}/auth`,
    token_endpoint: `${base}/token`,
    jwks_uri: `${base}/jwks.json`,
    revocation_endpoint: `${base}/revoke`,
    introspection_endpoint: `${base}/introspect`,
    userinfo_endpoint: `${base}/userinfo`,
    end_session_endpoint: `${base}/end-session`,
    scopes_supported: [...new Set([...STANDARD_SCOPES, ...ctx.directory.allScopes()])].sort(),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: [
      'client_secret_basic',
      'client_secret_post',
      'none',
    ],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    // OpenID Connect Discovery 1.0 section 3.
    subject_types_supported: ['public'],
    // From the key ring: Go clients assume RS256 when this is missing, and ES256 tokens then fail.
    id_token_signing_alg_values_supported: ctx.keys.algorithms(),
    claims_supported: [...TOKEN_CLAIMS, ...RELEASABLE_CLAIMS],
    prompt_values_supported: [...PROMPTS],
    claims_parameter_supported: false,
    request_parameter_supported: false,
    // Discovery's default for this one is true: say it is not supported.
    request_uri_parameter_supported: false,
  };
}
