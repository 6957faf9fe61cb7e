// The kind e2e's client (test/e2e-kind/run.ts) cannot run against kind here (no Docker engine),
// so it runs against the same programs as local processes: user-service behind a sidecar with
// the end-to-end limits 1/10/2, and the auth server with a client using client_secret_basic.
// This pins the client code that `make e2e-kind` relies on: the scenario and the form-driven flow.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { generateClientSecret, hashClientSecret } from '../../services/auth-server/client-secret.ts';
import { hashPassword } from '../../services/auth-server/passwords.ts';
import { runOAuthFlow, runScenario } from '../e2e-kind/run.ts';
import { freePort } from '../harness/ports.ts';
import { startProgram, type Program } from '../harness/programs.ts';

const programs: Program[] = [];
let dir: string;
let gateway: string;
let issuer: string;
const clientSecret = generateClientSecret();
const redirectUri = 'http://127.0.0.1:13000/callback';

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'portcullis-kind-client-'));
  const [userPort, sidecarPort, adminPort, authPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  programs.push(await startProgram({ entry: 'services/user-service/main.ts', env: { PORT: String(userPort) }, waitPort: userPort }));

  const sidecarConfig = path.join(dir, 'sidecar.yaml');
  writeFileSync(
    sidecarConfig,
    stringify({
      listen: { host: '127.0.0.1', port: sidecarPort },
      admin: { host: '127.0.0.1', port: adminPort },
      upstream: { url: `http://127.0.0.1:${userPort}` },
      route: { id: 'all', path: '/**' },
      limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 },
    }),
  );
  programs.push(await startProgram({ entry: 'sidecar/main.ts', args: ['--config', sidecarConfig], waitPort: sidecarPort }));
  gateway = `http://127.0.0.1:${sidecarPort}`;

  const clients = path.join(dir, 'clients.json');
  const users = path.join(dir, 'users.json');
  writeFileSync(
    clients,
    JSON.stringify({
      clients: [
        {
          client_id: 'e2e-client',
          client_secret_hash: hashClientSecret(clientSecret),
          display_name: 'E2E',
          redirect_uris: [redirectUri],
          scopes: ['profile'],
          grant_types: ['authorization_code'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
    }),
  );
  writeFileSync(users, JSON.stringify({ users: [{ username: 'e2e-user', password_hash: await hashPassword('e2e-password') }] }));
  issuer = `http://127.0.0.1:${authPort}`;
  programs.push(
    await startProgram({
      entry: 'services/auth-server/main.ts',
      env: { PORT: String(authPort), AUTH_ISSUER: issuer, AUTH_CLIENTS_FILE: clients, AUTH_USERS_FILE: users },
      waitPort: authPort,
    }),
  );
});

afterAll(async () => {
  for (const p of programs.reverse()) await p.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the kind e2e client against local processes', () => {
  it('runs the 30-request scenario through the gateway and gets the exact-model count', async () => {
    const { ok, expected } = await runScenario(gateway);
    expect(Math.abs(ok - expected)).toBeLessThanOrEqual(1);
    // On a fixed 0.5 s schedule the model admits 12 (more only if the sends fell far behind).
    expect(expected).toBeGreaterThanOrEqual(12);
  });

  it('signs in, consents and exchanges the code for an access token', async () => {
    const token = await runOAuthFlow({ issuer, clientId: 'e2e-client', clientSecret, redirectUri, username: 'e2e-user', password: 'e2e-password' });
    expect(token.split('.')).toHaveLength(3);
  });
});
