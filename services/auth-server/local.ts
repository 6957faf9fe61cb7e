// `make run` description of the auth server (lib/local-program.ts): a demo user alice /
// wonderland (group wonderland) and a registered OpenID Connect client `demo-client` (redirect http://localhost:3000/callback) whose
// secret comes from DEMO_CLIENT_SECRET or is generated, printed in the banner and shared with the
// demo client. The files are written into the run's private work folder.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LocalProgramFactory } from '../../lib/local-program.ts';
import { generateClientSecret, hashClientSecret } from '../../lib/config/client-secret.ts';
import type { ClientRegistry } from '../../lib/config/client-registry.ts';
import type { UsersFile } from '../../lib/config/users-file.ts';
import { hashPassword } from '../../lib/config/passwords.ts';

const port = 9000;
/** Off the sidecar's admin port (9090) of the same stack. */
const metricsPort = 9001;
export const DEMO_CLIENT_ID = 'demo-client';
export const DEMO_REDIRECT_URI = 'http://localhost:3000/callback';

const authServer: LocalProgramFactory = async (ctx) => {
  const secret = ctx.env['DEMO_CLIENT_SECRET'] ?? generateClientSecret();
  ctx.shared.set('demoClientId', DEMO_CLIENT_ID);
  ctx.shared.set('demoClientSecret', secret);
  ctx.shared.set('authIssuer', `http://localhost:${port}`);

  const clients: ClientRegistry = {
    clients: [
      {
        client_id: DEMO_CLIENT_ID,
        client_secret_hash: hashClientSecret(secret),
        display_name: 'Portcullis Demo Client',
        redirect_uris: [DEMO_REDIRECT_URI],
        scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
  };
  const users: UsersFile = {
    users: [
      {
        username: 'alice',
        password_hash: await hashPassword('wonderland'),
        profile: {
          name: 'Alice Liddell',
          given_name: 'Alice',
          family_name: 'Liddell',
          preferred_username: 'alice',
          email: 'alice@example.com',
          email_verified: true,
        },
        groups: ['wonderland'],
      },
    ],
  };
  const clientsFile = path.join(ctx.workDir, 'auth-clients.json');
  const usersFile = path.join(ctx.workDir, 'auth-users.json');
  writeFileSync(clientsFile, JSON.stringify(clients, null, 2), { mode: 0o600 });
  writeFileSync(usersFile, JSON.stringify(users, null, 2), { mode: 0o600 });

  return {
    name: 'auth-server',
    entry: 'services/auth-server/main.ts',
    port,
    env: {
      PORT: String(port),
      AUTH_METRICS_PORT: String(metricsPort),
      AUTH_ISSUER: `http://localhost:${port}`,
      AUTH_CLIENTS_FILE: clientsFile,
      AUTH_USERS_FILE: usersFile,
    },
    notes: [
      `OpenID Connect discovery: curl http://localhost:${port}/.well-known/openid-configuration`,
      `demo user: alice / wonderland; consents: http://localhost:${port}/consents`,
      `metrics: curl http://localhost:${metricsPort}/metrics`,
      `client: ${DEMO_CLIENT_ID} secret ${secret}${ctx.env['DEMO_CLIENT_SECRET'] === undefined ? ' (generated; set DEMO_CLIENT_SECRET to choose)' : ''}`,
    ],
  };
};

export default authServer;
