// A plain-http redirect URI is accepted only for a loopback host (RFC 8252 7.3, 8.3) unless the
// client is registered with allow_insecure_redirect_uris: before, http:// was accepted for any
// host, so codes could travel in clear text across the network. The real server reloads a client
// registry that breaks the rule and keeps the previous one; with the flag it accepts it.
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { RegisteredClient } from '../../lib/config/client-registry.ts';
import { walk } from '../harness/auth-flow.ts';
import { stackOn } from '../harness/fixtures.ts';

describe('http redirect URIs in the client registry', () => {
  const on = stackOn('memory');

  const client = (
    clientId: string,
    redirectUris: string[],
    extra: Partial<RegisteredClient> = {},
  ): RegisteredClient => ({
    client_id: clientId,
    display_name: clientId,
    redirect_uris: redirectUris,
    scopes: ['profile'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'none',
    ...extra,
  });
  /** Writes the registry (fixture clients plus `extra`) and waits for the server to reload it or refuse it. */
  const register = async (extra: RegisteredClient[]) => {
    const program = on.stack().programs[0];
    if (program === undefined) throw new Error('no auth server');
    const from = program.lines.length;
    writeFileSync(
      on.stack().clientsFile,
      JSON.stringify({ clients: [...on.stack().clients.clients, ...extra] }),
    );
    for (let i = 0; i < 300; i++) {
      // The registry is re-checked when a request looks a client up.
      await (await fetch(`${on.stack().issuer}/auth?client_id=nobody`)).arrayBuffer();
      const line = program.lines.slice(from).find((l) => /file reloaded|file not reloaded/.test(l));
      if (line !== undefined) return line;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the auth server neither reloaded nor refused the client registry');
  };
  const authorizePage = (clientId: string, redirectUri: string) =>
    fetch(
      `${on.stack().issuer}/auth?${new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', code_challenge: 'a'.repeat(43), code_challenge_method: 'S256' })}`,
      { redirect: 'manual' },
    );

  it('refuses http for a host that is not loopback, keeping the previous registry', async () => {
    const line = await register([
      client('plain-http', ['https://app.example.test/ok', 'http://app.example.test/callback']),
    ]);
    expect(line).toContain('file not reloaded');
    expect(line).toContain('clients.5.redirect_uris.1: http is allowed only for loopback hosts');
    const res = await authorizePage('plain-http', 'http://app.example.test/callback');
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Unknown application');
  });

  it('accepts http for loopback hosts, and for any host when the client allows insecure redirect URIs', async () => {
    const loopback = ['http://localhost:8080/cb', 'http://127.0.0.2/cb', 'http://[::1]:9000/cb'];
    const line = await register([
      client('native-app', loopback),
      client('lab-app', ['http://app.example.test/callback'], {
        allow_insecure_redirect_uris: true,
      }),
    ]);
    expect(line).toContain('file reloaded');
    for (const uri of loopback)
      expect((await authorizePage('native-app', uri)).status, uri).toBe(200);
    expect((await authorizePage('lab-app', 'http://app.example.test/callback')).status).toBe(200);
  });

  it('a loopback IP redirect URI matches on any port (RFC 8252), and the code goes to that port', async () => {
    await register([client('port-app', ['http://127.0.0.1/cb', 'http://localhost:8080/cb'])]);
    expect((await authorizePage('port-app', 'http://127.0.0.1:53124/cb')).status).toBe(200);
    // The path must still match, and localhost (a name, not an IP literal) is matched exactly.
    expect((await authorizePage('port-app', 'http://127.0.0.1:53124/other')).status).toBe(400);
    expect((await authorizePage('port-app', 'http://localhost:8081/cb')).status).toBe(400);
    const { location } = await walk(
      `${on.stack().issuer}/auth?${new URLSearchParams({ client_id: 'port-app', redirect_uri: 'http://127.0.0.1:53124/cb', response_type: 'code', code_challenge: 'a'.repeat(43), code_challenge_method: 'S256' })}`,
    );
    expect(`${location.origin}${location.pathname}`).toBe('http://127.0.0.1:53124/cb');
    expect(location.searchParams.get('code')).not.toBeNull();
  });
});
