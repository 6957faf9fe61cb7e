// The token endpoint checks a request against the code (issued to this client, for this
// redirect_uri, with a matching PKCE verifier) before it consumes the code. Before, the code was
// consumed first: a failed redemption by another client burned the owner's code, and a public
// client replaying someone else's used code revoked the owner's tokens. Both attacks run here
// against the real server, on the memory store and on a redis-server configured as the chart's.
import { describe, expect, it } from 'vitest';
import { authorize, pkce, tokenRequest } from '../harness/auth-flow.ts';
import { stackOn } from '../harness/fixtures.ts';
import { SECRETS } from '../harness/auth-stack.ts';

describe.each(['memory', 'redis'] as const)(
  'code redemption checks before it consumes (%s store)',
  (store) => {
    const on = stackOn(store);

    const codeFor = async (clientId: string, challenge?: string) => {
      const { location } = await authorize({
        issuer: on.stack().issuer,
        clientId,
        redirectUri: on.stack().redirectUri,
        ...(challenge ? { challenge } : {}),
      });
      const code = location.searchParams.get('code');
      if (code === null) throw new Error(`no code: ${location}`);
      return code;
    };
    const asOwner = (code: string, extra: Record<string, string> = {}) =>
      tokenRequest(on.stack().issuer, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: on.stack().redirectUri,
        client_id: 'demo-client',
        client_secret: SECRETS.post,
        ...extra,
      });
    const asOtherClient = (code: string) =>
      tokenRequest(on.stack().issuer, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: on.stack().redirectUri,
        client_id: 'other-client',
        client_secret: SECRETS.other,
      });
    const asPublicClient = (code: string) =>
      tokenRequest(on.stack().issuer, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: on.stack().redirectUri,
        client_id: 'public-client',
        code_verifier: pkce().verifier,
      });
    const active = async (token: string) => {
      const res = await fetch(`${on.stack().issuer}/introspect`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, client_id: 'demo-client', client_secret: SECRETS.post }),
      });
      return ((await res.json()) as { active: boolean }).active;
    };

    it("another client's failed redemption does not burn the owner's code", async () => {
      const code = await codeFor('demo-client');
      const stolen = await asOtherClient(code);
      expect(stolen.status).toBe(400);
      expect(stolen.json).toEqual({
        error: 'invalid_grant',
        error_description: 'the authorization code was issued to another client',
      });
      const owner = await asOwner(code);
      expect(owner.status).toBe(200);
      expect(await active(String(owner.json['access_token']))).toBe(true);
    });

    it("a public client replaying someone else's used code revokes nothing", async () => {
      const code = await codeFor('demo-client');
      const owner = await asOwner(code);
      expect(owner.status).toBe(200);
      const replay = await asPublicClient(code);
      expect(replay.status).toBe(400);
      expect(replay.json['error']).toBe('invalid_grant');
      expect(await active(String(owner.json['access_token']))).toBe(true);
      const refreshed = await tokenRequest(on.stack().issuer, {
        grant_type: 'refresh_token',
        refresh_token: String(owner.json['refresh_token']),
        client_id: 'demo-client',
        client_secret: SECRETS.post,
      });
      expect(refreshed.status).toBe(200);
    });

    it('a wrong redirect_uri or PKCE verifier from the owner does not burn the code; the right request then succeeds once', async () => {
      const { verifier, challenge } = pkce();
      const code = await codeFor('demo-client', challenge);
      expect((await asOwner(code, { code_verifier: pkce().verifier })).json['error']).toBe(
        'invalid_grant',
      );
      expect(
        (
          await asOwner(code, {
            code_verifier: verifier,
            redirect_uri: `${on.stack().redirectUri}/x`,
          })
        ).json['error'],
      ).toBe('invalid_grant');
      const ok = await asOwner(code, { code_verifier: verifier });
      expect(ok.status).toBe(200);
      // The owner's own replay of a used code still revokes what it issued.
      const replay = await asOwner(code, { code_verifier: verifier });
      expect(replay.json).toEqual({
        error: 'invalid_grant',
        error_description: 'the authorization code was already used',
      });
      expect(await active(String(ok.json['access_token']))).toBe(false);
    });
  },
);
