// The demo client's side of the Authorization Code Grant and OpenID Connect: discovery
// (openid-configuration), the authorization URL with state, PKCE S256 (RFC 7636) and, when it
// asks for `openid`, a nonce; the code exchange, the checks RFC 9207 asks of a client (iss on the
// response) and the id_token's validation (Core 3.1.3.7). Every answer from the network is
// parsed with zod.
import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { z } from 'zod';
import type { DemoClientConfig } from './config.ts';

const metadataSchema = z.object({
  issuer: z.string(),
  authorization_endpoint: z.url(),
  token_endpoint: z.url(),
  jwks_uri: z.url(),
  authorization_response_iss_parameter_supported: z.boolean().optional(),
  id_token_signing_alg_values_supported: z.array(z.string()).optional(),
});
export type Metadata = z.infer<typeof metadataSchema>;

export const tokenResponseSchema = z.object({
  access_token: z.string().min(1),
  token_type: z.string().regex(/^bearer$/i),
  expires_in: z.number().optional(),
  scope: z.string().optional(),
  refresh_token: z.string().optional(),
  id_token: z.string().optional(),
});
export type TokenResponse = z.infer<typeof tokenResponseSchema>;

const tokenErrorSchema = z.object({ error: z.string(), error_description: z.string().optional() });

export interface PendingAuthorization {
  readonly state: string;
  readonly verifier: string;
  /** Sent when the scope asks for openid; the id_token must carry it back. */
  readonly nonce?: string;
}

export interface OAuthClient {
  metadata(): Promise<Metadata>;
  /** A new state and PKCE verifier, and the URL to send the browser to. */
  start(): Promise<{ url: string; pending: PendingAuthorization }>;
  exchange(code: string, verifier: string): Promise<TokenResponse>;
  /** Verifies the access token's signature and issuer against the discovered JWKS; returns its claims. */
  verify(accessToken: string): Promise<JWTPayload>;
  /** Validates an id_token for this client (signature by a discovered algorithm, iss, aud, azp, nonce, typ JWT); returns its claims. */
  verifyIdToken(idToken: string, nonce: string): Promise<JWTPayload>;
}

/** The only algorithms this client accepts, whatever the metadata lists. */
const ALGORITHMS = ['ES256', 'RS256'];

export function createOAuthClient(config: DemoClientConfig): OAuthClient {
  const issuer = config.DEMO_ISSUER.replace(/\/+$/, '');
  let discovered: Promise<Metadata> | undefined;
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;

  const metadata = () => {
    discovered ??= (async () => {
      const res = await fetch(`${issuer}/.well-known/openid-configuration`, {
        signal: AbortSignal.timeout(5000),
      });
      if (!res.ok) throw new Error(`discovery failed: HTTP ${res.status}`);
      const meta = metadataSchema.parse(await res.json());
      if (meta.issuer !== issuer)
        throw new Error(
          'discovery: issuer in the metadata differs from the configured one (RFC 8414 3.3)',
        );
      return meta;
    })().catch((err: unknown) => {
      discovered = undefined;
      throw err;
    });
    return discovered;
  };

  return {
    metadata,
    async start() {
      const meta = await metadata();
      const state = randomBytes(32).toString('base64url');
      const verifier = randomBytes(32).toString('base64url');
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      const nonce = config.DEMO_SCOPE.split(' ').includes('openid')
        ? randomBytes(32).toString('base64url')
        : undefined;
      const url = new URL(meta.authorization_endpoint);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: config.DEMO_CLIENT_ID,
        redirect_uri: config.DEMO_REDIRECT_URI,
        scope: config.DEMO_SCOPE,
        state,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...(nonce !== undefined ? { nonce } : {}),
      }).toString();
      return {
        url: url.toString(),
        pending: { state, verifier, ...(nonce !== undefined ? { nonce } : {}) },
      };
    },
    async exchange(code, verifier) {
      const meta = await metadata();
      const body = new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: config.DEMO_REDIRECT_URI,
        code_verifier: verifier,
      });
      const headers: Record<string, string> = {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      };
      if (config.DEMO_CLIENT_AUTH === 'client_secret_basic') {
        const enc = (v: string) => encodeURIComponent(v);
        headers['authorization'] =
          `Basic ${Buffer.from(`${enc(config.DEMO_CLIENT_ID)}:${enc(config.DEMO_CLIENT_SECRET)}`).toString('base64')}`;
      } else {
        body.set('client_id', config.DEMO_CLIENT_ID);
        body.set('client_secret', config.DEMO_CLIENT_SECRET);
      }
      const res = await fetch(meta.token_endpoint, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(5000),
      });
      const json: unknown = await res.json().catch(() => ({}));
      if (!res.ok) {
        const err = tokenErrorSchema.safeParse(json);
        throw new Error(
          err.success ? `token endpoint: ${err.data.error}` : `token endpoint: HTTP ${res.status}`,
        );
      }
      return tokenResponseSchema.parse(json);
    },
    async verify(accessToken) {
      const meta = await metadata();
      jwks ??= createRemoteJWKSet(new URL(meta.jwks_uri));
      const { payload } = await jwtVerify(accessToken, jwks, {
        issuer,
        algorithms: ALGORITHMS,
        typ: 'at+jwt',
      });
      return payload;
    },
    async verifyIdToken(idToken, nonce) {
      const meta = await metadata();
      jwks ??= createRemoteJWKSet(new URL(meta.jwks_uri));
      const advertised = meta.id_token_signing_alg_values_supported ?? ['RS256'];
      const { payload } = await jwtVerify(idToken, jwks, {
        issuer,
        audience: config.DEMO_CLIENT_ID,
        algorithms: ALGORITHMS.filter((a) => advertised.includes(a)),
        typ: 'JWT',
        requiredClaims: ['sub', 'iat', 'exp'],
      });
      if (payload['nonce'] !== nonce)
        throw new Error('id_token: the nonce is not the one this sign-in sent');
      if (payload['azp'] !== undefined && payload['azp'] !== config.DEMO_CLIENT_ID)
        throw new Error('id_token: azp is another client');
      return payload;
    },
  };
}
