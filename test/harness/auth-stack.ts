// Test helper (not a test file): runs the sign-in stack as real processes on free ports — the
// auth server (one or more replicas), and on request the user service, the sidecar in front of
// it and the demo client — with fixture clients, users and a signing-keys file the test can read.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import type { ClientRegistry, RegisteredClient } from '../../lib/config/client-registry.ts';
import type { SigningKeysFile } from '../../lib/config/signing-keys-file.ts';
import type { UsersFile } from '../../lib/config/users-file.ts';
import { hashPassword } from '../../lib/config/passwords.ts';
import { generateSigningJwks } from '../../lib/config/signing-keys.ts';
import { freePort } from './ports.ts';
import { startProgram, startSidecar, startUserService, type Program } from './programs.ts';
import { authServerNodeEnv } from '../../operator/resources/auth/deployment.ts';
import { AUTH_SERVER_ENTRY } from '../../operator/resources/auth/names.ts';
import { DEFAULT_AUTH_SERVER_RESOURCES } from '../../operator/resources/shared/container-resources.ts';

/**
 * The auth server as its pods run it: the bundle (built by the tier's global setup) with the V8
 * caps the operator renders for the default resources.
 */
export const AUTH_SERVER_AS_DEPLOYED = {
  entry: AUTH_SERVER_ENTRY,
  env: authServerNodeEnv(DEFAULT_AUTH_SERVER_RESOURCES),
} as const;

export const AUDIENCE = 'urn:portcullis:user-service';
export const SECRETS = {
  post: 'post-client-secret-0123456789abcdef0123456789',
  basic: 'basic-client-secret-0123456789abcdef012345678',
  other: 'other-client-secret-0123456789abcdef012345678',
  oidc: 'oidc-client-secret-0123456789abcdef0123456789',
};

export interface StackOptions {
  readonly redisUrl?: string;
  /** Auth-server replicas (sharing Redis when redisUrl is set). */
  readonly replicas?: number;
  readonly authEnv?: Record<string, string>;
  readonly userService?: boolean;
  readonly sidecar?: boolean;
  /** The sidecar's key source: the USER-ID header (default) or the verified access token's sub. */
  readonly limitKey?: 'header' | 'jwt';
  readonly demoClient?: boolean;
  /** Clients registered after the fixture ones (e.g. a resource server). */
  readonly extraClients?: readonly RegisteredClient[];
  /** The public issuer when a front serves the auth server (e.g. https); default the first replica's URL. */
  readonly issuer?: string;
}

export interface Stack {
  readonly issuer: string;
  /** Base URL of each auth-server replica (the first is the issuer). */
  readonly authUrls: string[];
  /** GET /metrics of each replica, on its own port (AUTH_METRICS_PORT). */
  readonly authMetricsUrls: string[];
  readonly userServiceUrl?: string;
  readonly sidecarUrl?: string;
  readonly demoClientUrl?: string;
  /** The redirect URI registered for the fixture clients. */
  readonly redirectUri: string;
  readonly keys: SigningKeysFile;
  readonly dir: string;
  readonly clientsFile: string;
  readonly clients: ClientRegistry;
  readonly programs: Program[];
  stop(): Promise<void>;
}

export async function fixtureFiles(
  dir: string,
  redirectUri: string,
  extraClients: readonly RegisteredClient[] = [],
) {
  // ln=14: fast enough for many sign-ins in tests; production hashes use ln=17.
  const fast = { ln: 14, r: 8, p: 1 };
  const clients: ClientRegistry = {
    clients: [
      {
        client_id: 'demo-client',
        client_secret_hash: hashClientSecret(SECRETS.post),
        display_name: 'Demo <Client>',
        redirect_uris: [redirectUri],
        scopes: ['profile', 'email'],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'client_secret_post',
      },
      {
        client_id: 'basic-client',
        client_secret_hash: hashClientSecret(SECRETS.basic),
        display_name: 'Basic Client',
        redirect_uris: [redirectUri],
        scopes: ['profile', 'email'],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        client_id: 'other-client',
        client_secret_hash: hashClientSecret(SECRETS.other),
        display_name: 'Other Client',
        redirect_uris: [redirectUri],
        scopes: ['profile'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
      {
        client_id: 'oidc-client',
        client_secret_hash: hashClientSecret(SECRETS.oidc),
        display_name: 'OIDC Client',
        redirect_uris: [redirectUri],
        scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        client_id: 'public-client',
        display_name: 'Public Client',
        redirect_uris: [redirectUri],
        scopes: ['profile'],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'none',
      },
      ...extraClients,
    ],
  };
  const users: UsersFile = {
    users: [
      {
        username: 'alice',
        password_hash: await hashPassword('wonderland', fast),
        profile: {
          name: 'Alice Liddell',
          preferred_username: 'alice',
          email: 'alice@example.com',
          email_verified: true,
        },
        groups: ['readers', 'wonderland-admins'],
      },
      {
        username: 'bob',
        password_hash: await hashPassword('builder', fast),
        profile: { name: 'Bob' },
      },
    ],
  };
  const keys = await generateSigningJwks({ alg: 'ES256' });
  const clientsFile = path.join(dir, 'clients.json');
  writeFileSync(clientsFile, JSON.stringify(clients));
  writeFileSync(path.join(dir, 'users.json'), JSON.stringify(users));
  writeFileSync(path.join(dir, 'keys.json'), JSON.stringify(keys));
  return {
    clients,
    users,
    keys,
    clientsFile,
    usersFile: path.join(dir, 'users.json'),
    keysFile: path.join(dir, 'keys.json'),
  };
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-auth-'));
  const programs: Program[] = [];
  const stop = async () => {
    await Promise.all(programs.reverse().map((p) => p.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const demoPort = await freePort();
    const redirectUri =
      options.demoClient === true
        ? `http://127.0.0.1:${demoPort}/callback`
        : 'http://127.0.0.1:1/callback';
    const files = await fixtureFiles(dir, redirectUri, options.extraClients);
    const authPorts: number[] = [];
    const metricsPorts: number[] = [];
    for (let i = 0; i < (options.replicas ?? 1); i++) {
      authPorts.push(await freePort());
      metricsPorts.push(await freePort());
    }
    const issuer = options.issuer ?? `http://127.0.0.1:${authPorts[0]}`;
    for (const [i, port] of authPorts.entries()) {
      programs.push(
        await startProgram({
          name: `auth-server-${i}`,
          entry: AUTH_SERVER_AS_DEPLOYED.entry,
          waitPort: port,
          env: {
            ...AUTH_SERVER_AS_DEPLOYED.env,
            PORT: String(port),
            HOST: '127.0.0.1',
            AUTH_METRICS_PORT: String(metricsPorts[i]),
            AUTH_ISSUER: issuer,
            AUTH_CLIENTS_FILE: files.clientsFile,
            AUTH_USERS_FILE: files.usersFile,
            AUTH_KEYS_FILE: files.keysFile,
            AUTH_FILE_CHECK_MS: '100',
            LOG_LEVEL: 'info',
            // Tests sign in many times; the throttle test sets its own limits.
            AUTH_SIGNIN_USER_ADDRESS_BURST: '1000',
            AUTH_SIGNIN_USER_BURST: '1000',
            AUTH_SIGNIN_ADDRESS_BURST: '1000',
            // Tests send wrong client secrets on purpose; the guessing test sets its own limit.
            AUTH_CLIENT_AUTH_FAILURES_BURST: '1000',
            // Strict rotation: tests reuse refresh tokens at once on purpose; the grace window's test sets its own.
            AUTH_REFRESH_REUSE_GRACE_SECONDS: '0',
            ...(options.redisUrl !== undefined ? { REDIS_URL: options.redisUrl } : {}),
            ...options.authEnv,
          },
        }),
      );
    }
    let userServiceUrl: string | undefined;
    let sidecarUrl: string | undefined;
    let demoClientUrl: string | undefined;
    if (options.userService === true || options.sidecar === true || options.demoClient === true) {
      const userService = await startUserService({
        AUTH_ISSUER: issuer,
        AUTH_JWKS_URL: `${issuer}/jwks.json`,
        AUTH_AUDIENCE: AUDIENCE,
      });
      programs.push(userService.program);
      userServiceUrl = userService.url;
    }
    if ((options.sidecar === true || options.demoClient === true) && userServiceUrl !== undefined) {
      const sidecar = await startSidecar({
        upstream: { url: userServiceUrl },
        route: { id: 'all', path: '/**' },
        limiter: {
          replenishRate: 20,
          burstCapacity: 100,
          requestedTokens: 3,
          ...(options.limitKey === 'jwt'
            ? {
                key: 'jwt' as const,
                jwt: { issuer, audience: AUDIENCE, jwksUrl: `${issuer}/jwks.json` },
              }
            : {}),
        },
      });
      programs.push(sidecar.program);
      sidecarUrl = sidecar.url;
    }
    if (options.demoClient === true && sidecarUrl !== undefined) {
      programs.push(
        await startProgram({
          name: 'demo-client',
          entry: 'services/demo-client/main.ts',
          waitPort: demoPort,
          env: {
            PORT: String(demoPort),
            HOST: '127.0.0.1',
            DEMO_ISSUER: issuer,
            DEMO_CLIENT_ID: 'demo-client',
            DEMO_CLIENT_SECRET: SECRETS.post,
            DEMO_REDIRECT_URI: redirectUri,
            DEMO_ME_URL: `${sidecarUrl}/me`,
            // The fixture demo-client is a plain OAuth client (its registration has no openid).
            DEMO_SCOPE: 'profile email',
          },
        }),
      );
      demoClientUrl = `http://127.0.0.1:${demoPort}`;
    }
    return {
      issuer,
      authUrls: authPorts.map((p) => `http://127.0.0.1:${p}`),
      authMetricsUrls: metricsPorts.map((p) => `http://127.0.0.1:${p}/metrics`),
      ...(userServiceUrl !== undefined ? { userServiceUrl } : {}),
      ...(sidecarUrl !== undefined ? { sidecarUrl } : {}),
      ...(demoClientUrl !== undefined ? { demoClientUrl } : {}),
      redirectUri,
      keys: files.keys,
      dir,
      clientsFile: files.clientsFile,
      clients: files.clients,
      programs,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
