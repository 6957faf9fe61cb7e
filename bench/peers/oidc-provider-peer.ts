// The authorization-server anchor: panva's oidc-provider configured like the Portcullis auth server
// for the benchmark's flow: authorization code with PKCE (S256 required), a confidential client
// authenticating with client_secret_basic, access tokens as RFC 9068 JWTs signed ES256 (through
// the resourceIndicators feature, the provider's way to issue JWT access tokens), a rotating refresh
// token with each exchange (Portcullis issues one too), codes and tokens in the in-memory adapter
// (Portcullis' embedded memory store). Sign-in and consent through the provider's development
// interactions (the benchmark mints codes through the real flow and then measures the exchange).
// Env: PORT, ISSUER, CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, AUDIENCE, SIGNING_JWK (private ES256
// JWK as JSON), CODE_TTL_SECONDS.
import Provider, { type ProviderClient } from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';

/**
 * The provider's own memory adapter over an unbounded map. Its default storage is an LRU of 1,000
 * entries, which evicts codes before they are exchanged when a round mints 1,000 at once (seen as
 * `invalid_grant`); Portcullis' memory store has no entry cap either. Entries keep their expiry.
 */
const entries = new Map<string, { value: unknown; expiresAt: number }>();
const store = {
  get(key: string): unknown {
    if ((entries.get(key)?.expiresAt ?? Infinity) <= Date.now()) entries.delete(key);
    return entries.get(key)?.value;
  },
  set(key: string, value: unknown, options?: { maxAge?: number }): void {
    entries.set(key, { value, expiresAt: Date.now() + (options?.maxAge ?? Infinity) });
  },
  delete(key: string): void {
    entries.delete(key);
  },
};

const env = process.env;
const need = (name: string): string => {
  const v = env[name];
  if (v === undefined || v === '') throw new Error(`${name} is required`);
  return v;
};
const port = Number(need('PORT'));
const audience = need('AUDIENCE');
const provider = new Provider(need('ISSUER'), {
  clients: [
    {
      client_id: need('CLIENT_ID'),
      client_secret: need('CLIENT_SECRET'),
      redirect_uris: [need('REDIRECT_URI')],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  adapter: (model: string) => new MemoryAdapter(model, store),
  jwks: { keys: [JSON.parse(need('SIGNING_JWK')) as Record<string, string>] },
  clientDefaults: { id_token_signed_response_alg: 'ES256' },
  pkce: { required: () => true },
  scopes: ['profile', 'email', 'offline_access'],
  cookies: { keys: ['bench-cookie-key-0123456789abcdef'] },
  ttl: {
    AuthorizationCode: Number(env['CODE_TTL_SECONDS'] ?? 600),
    AccessToken: 3600,
    RefreshToken: 86_400,
    Grant: 86_400,
    Session: 86_400,
    Interaction: 3600,
  },
  features: {
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: 'profile email',
        audience,
        accessTokenTTL: 3600,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  issueRefreshToken: async (_ctx: unknown, client: ProviderClient) =>
    client.grantTypeAllowed('refresh_token'),
  findAccount: async (_ctx: unknown, sub: string) => ({
    accountId: sub,
    claims: async () => ({ sub }),
  }),
});
// Quiet: no per-request logging (the Portcullis server runs at LOG_LEVEL=warn in the benchmark).
provider.on('server_error', (_ctx, err) =>
  console.error(JSON.stringify({ msg: 'server_error', err: err.message })),
);

const server = provider.listen(port, '127.0.0.1');
const shutdown = () => server.close(() => process.exit(0));
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
server.on('listening', () => console.log(JSON.stringify({ msg: 'oidc-provider listening', port })));
