// Names of the per-namespace auth-server objects and of an OAuthClient's Secret.

export const AUTH_SERVER_NAME = 'portcullis-auth-server';
export const CLIENT_REGISTRY_SECRET = 'portcullis-auth-clients';
export const CLIENT_REGISTRY_KEY = 'clients.json';
export const SIGNING_KEYS_SECRET = 'portcullis-auth-signing-keys';
export const SIGNING_KEYS_KEY = 'keys.json';
export const AUTH_CONFIG_ROOT = '/etc/portcullis/auth';
/** The auth-server image runs its bundle (scripts/build-programs.ts), not the TypeScript sources. */
export const AUTH_SERVER_ENTRY = 'dist/auth-server/main.mjs';
/** The auth server's GET /metrics port (its AUTH_METRICS_PORT), the container port named `metrics`. */
export const AUTH_SERVER_METRICS_PORT = 9090;

/** The client's Secret: demo-app -> demo-app-oauth-client. */
export function oauthClientSecretName(client: string): string {
  return `${client}-oauth-client`;
}
