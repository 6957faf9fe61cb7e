// Introspection answers a client only about its own tokens: before, any confidential client could
// introspect any token and read its username and scope. A client registered as a resource server
// (resource_server: true) may still introspect tokens issued to any client. Against the real
// server, on the memory store and on a redis-server configured as the chart's (refresh families
// are looked up in the store).
import { describe, expect, it } from 'vitest';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import { authorize, tokenRequest } from '../harness/auth-flow.ts';
import { stackOn } from '../harness/fixtures.ts';
import { SECRETS } from '../harness/auth-stack.ts';

const RESOURCE_SERVER_SECRET = 'resource-server-secret-0123456789abcdef0123456';

describe.each(['memory', 'redis'] as const)(
  "introspection of other clients' tokens (%s store)",
  (store) => {
    const on = stackOn(store, {
      extraClients: [
        {
          client_id: 'user-service',
          client_secret_hash: hashClientSecret(RESOURCE_SERVER_SECRET),
          display_name: 'User Service',
          redirect_uris: ['https://user-service.example/unused'],
          scopes: ['profile'],
          grant_types: ['authorization_code'],
          token_endpoint_auth_method: 'client_secret_basic',
          resource_server: true,
        },
      ],
    });

    /** Tokens issued to demo-client. */
    const demoClientTokens = async () => {
      const { location } = await authorize({
        issuer: on.stack().issuer,
        clientId: 'demo-client',
        redirectUri: on.stack().redirectUri,
      });
      const res = await tokenRequest(on.stack().issuer, {
        grant_type: 'authorization_code',
        code: location.searchParams.get('code') ?? '',
        redirect_uri: on.stack().redirectUri,
        client_id: 'demo-client',
        client_secret: SECRETS.post,
      });
      expect(res.status).toBe(200);
      return {
        access: String(res.json['access_token']),
        refresh: String(res.json['refresh_token']),
      };
    };
    const introspect = async (
      token: string,
      caller: { form?: [string, string]; basic?: [string, string] },
    ) => {
      const headers: Record<string, string> = {
        'content-type': 'application/x-www-form-urlencoded',
      };
      const body = new URLSearchParams({ token });
      if (caller.form !== undefined) {
        body.set('client_id', caller.form[0]);
        body.set('client_secret', caller.form[1]);
      }
      if (caller.basic !== undefined)
        headers['authorization'] =
          `Basic ${Buffer.from(caller.basic.join(':')).toString('base64')}`;
      const res = await fetch(`${on.stack().issuer}/introspect`, { method: 'POST', headers, body });
      expect(res.status).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    };

    it('another client learns nothing about a token (access or refresh) it was not issued: {active:false}', async () => {
      const { access, refresh } = await demoClientTokens();
      const other = { form: ['other-client', SECRETS.other] as [string, string] };
      expect(await introspect(access, other)).toEqual({ active: false });
      expect(await introspect(refresh, other)).toEqual({ active: false });
      const basic = { basic: ['basic-client', SECRETS.basic] as [string, string] };
      expect(await introspect(access, basic)).toEqual({ active: false });
      expect(await introspect(refresh, basic)).toEqual({ active: false });
      // The refusal is logged for the operator, without the token.
      await on
        .stack()
        .programs[0]?.waitForLine(
          /^(?=.*introspection of another client's token refused)(?=.*"client_id":"other-client")(?=.*"token_client_id":"demo-client")/,
        );
    });

    it('the client the token was issued to still gets the full answer', async () => {
      const { access, refresh } = await demoClientTokens();
      const own = { form: ['demo-client', SECRETS.post] as [string, string] };
      expect(await introspect(access, own)).toMatchObject({
        active: true,
        token_type: 'Bearer',
        client_id: 'demo-client',
        sub: 'alice',
        scope: 'profile',
      });
      expect(await introspect(refresh, own)).toMatchObject({
        active: true,
        token_type: 'refresh_token',
        client_id: 'demo-client',
        sub: 'alice',
      });
    });

    it('a client registered as a resource server introspects tokens issued to any client', async () => {
      const { access, refresh } = await demoClientTokens();
      const rs = { basic: ['user-service', RESOURCE_SERVER_SECRET] as [string, string] };
      expect(await introspect(access, rs)).toMatchObject({
        active: true,
        token_type: 'Bearer',
        client_id: 'demo-client',
        username: 'alice',
        scope: 'profile',
      });
      expect(await introspect(refresh, rs)).toMatchObject({
        active: true,
        token_type: 'refresh_token',
        client_id: 'demo-client',
        username: 'alice',
      });
      // ...and a revoked one is inactive for it at once.
      const revoked = await fetch(`${on.stack().issuer}/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          token: access,
          client_id: 'demo-client',
          client_secret: SECRETS.post,
        }),
      });
      expect(revoked.status).toBe(200);
      expect(await introspect(access, rs)).toEqual({ active: false });
    });
  },
);
