// Test helper (not a test file): an auth-server context in process for the OpenID Connect unit
// tests: memory stores, a fixed clock, one confidential client registered for openid, and alice.
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import type { ClientRegistry, RegisteredClient } from '../../lib/config/client-registry.ts';
import type { UsersFile } from '../../lib/config/users-file.ts';
import { hashPassword } from '../../lib/config/passwords.ts';
import { generateSigningJwks } from '../../lib/config/signing-keys.ts';
import {
  createClientAuthThrottle,
  defaultClientAuthLimits,
} from '../../services/auth-server/client-auth-throttle.ts';
import type { AuthContext } from '../../services/auth-server/context.ts';
import { createKeyRing } from '../../services/auth-server/key-ring.ts';
import { AuthMetrics } from '../../services/auth-server/metrics.ts';
import { createPasswordGate } from '../../services/auth-server/password-gate.ts';
import { createDirectory } from '../../services/auth-server/registry.ts';
import { createMemoryStores } from '../../services/auth-server/stores/memory.ts';

export const ISSUER = 'https://id.example.com';
export const REDIRECT = 'https://app.example.com/cb';
export const app: RegisteredClient = {
  client_id: 'app',
  client_secret_hash: hashClientSecret('s3cret'),
  display_name: 'App',
  redirect_uris: [REDIRECT],
  scopes: ['openid', 'profile', 'groups', 'offline_access'],
  grant_types: ['authorization_code', 'refresh_token'],
  token_endpoint_auth_method: 'client_secret_post',
};

export async function context(
  alg: 'ES256' | 'RS256' = 'ES256',
  client: RegisteredClient = app,
): Promise<AuthContext> {
  const t = 1_800_000_000_000;
  const now = () => t;
  const clients: ClientRegistry = { clients: [client] };
  const users: UsersFile = {
    users: [
      {
        username: 'alice',
        password_hash: await hashPassword('wonderland', { ln: 10, r: 8, p: 1 }),
        profile: { name: 'Alice' },
        groups: ['readers'],
      },
    ],
  };
  const keys = await generateSigningJwks({ alg });
  return {
    settings: {
      issuer: ISSUER,
      audience: 'urn:rs',
      accessTokenTtlSeconds: 300,
      refreshTokenTtlSeconds: 3600,
      refreshFamilyMaxAgeSeconds: 86_400,
      refreshReuseGraceSeconds: 0,
      codeTtlSeconds: 60,
      interactionTtlSeconds: 600,
    },
    directory: createDirectory({ current: () => clients }, { current: () => users }),
    keys: createKeyRing(() => keys),
    stores: createMemoryStores(now),
    throttle: { attempt: async () => ({ allowed: true, retryAfterSeconds: 0 }) },
    clientAuthThrottle: createClientAuthThrottle(defaultClientAuthLimits, now),
    passwordGate: createPasswordGate({ concurrency: 2, queue: 16 }),
    metrics: new AuthMetrics({ defaultMetrics: false }),
    now,
    secureCookies: true,
  };
}
