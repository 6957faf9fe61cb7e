// Two auth-server processes sharing one Redis and one keys file: any replica continues what
// another started (codes, interactions, consents, refresh families). Also: the registry file is
// re-read when it changes, and a key rotation keeps old tokens valid while new ones use the new kid.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import { generateSigningJwks } from '../../lib/config/signing-keys.ts';
import { perDescribe } from '../harness/fixtures.ts';
import { authorize, browser, hidden, tokenRequest } from '../harness/auth-flow.ts';
import { SECRETS } from '../harness/auth-stack.ts';

const kidOf = (jwt: string) =>
  (JSON.parse(Buffer.from(jwt.split('.')[0] ?? '', 'base64url').toString()) as { kid: string }).kid;

describe('two auth-server replicas sharing Redis', () => {
  const stack = perDescribe(async (start) => {
    const redis = await start.redis();
    return start.authStack({ redisUrl: redis.url, replicas: 2, userService: true });
  });

  const [a, b] = [() => stack.authUrls[0] ?? '', () => stack.authUrls[1] ?? ''];
  const exchangeAt = (url: string, code: string) =>
    tokenRequest(url, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: stack.redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });

  it('a code issued by one replica is exchanged at the other, and only once across both', async () => {
    const { location } = await authorize({
      issuer: a(),
      clientId: 'demo-client',
      redirectUri: stack.redirectUri,
    });
    expect(location.searchParams.get('iss')).toBe(stack.issuer);
    const code = location.searchParams.get('code') ?? '';
    const first = await exchangeAt(b(), code);
    expect(first.status).toBe(200);
    const replay = await exchangeAt(a(), code);
    expect(replay.json['error']).toBe('invalid_grant');
    // The replay at replica A revoked the family created at replica B.
    const refresh = await tokenRequest(b(), {
      grant_type: 'refresh_token',
      refresh_token: String(first.json['refresh_token']),
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(refresh.json['error']).toBe('invalid_grant');
  });

  it('a sign-in started at one replica completes at the other; the consent is remembered by both', async () => {
    const br = browser();
    const q = new URLSearchParams({
      client_id: 'other-client',
      redirect_uri: stack.redirectUri,
      response_type: 'code',
      scope: 'profile',
    });
    const page = await (await br.get(`${a()}/auth?${q}`)).text();
    const signIn = await br.post(`${b()}/auth/sign-in`, {
      interaction: hidden(page, 'interaction') ?? '',
      csrf: hidden(page, 'csrf') ?? '',
      username: 'bob',
      password: 'builder',
    });
    expect(signIn.status).toBe(303);
    expect(signIn.headers.get('location')).toMatch(/^\/auth\/consent\?/);
    const consentPage = await (
      await br.get(`${a()}${signIn.headers.get('location') ?? ''}`)
    ).text();
    const allowed = await br.post(`${b()}/auth/consent`, {
      interaction: hidden(consentPage, 'interaction') ?? '',
      csrf: hidden(consentPage, 'csrf') ?? '',
      decision: 'allow',
    });
    expect(new URL(allowed.headers.get('location') ?? '').searchParams.get('code')).not.toBeNull();
    const again = await authorize({
      issuer: a(),
      clientId: 'other-client',
      redirectUri: stack.redirectUri,
      username: 'bob',
      password: 'builder',
    });
    expect(again.consentShown).toBe(false);
  });

  it('refresh rotation at one replica; reuse of the old token at the other revokes the family', async () => {
    const { location } = await authorize({
      issuer: b(),
      clientId: 'demo-client',
      redirectUri: stack.redirectUri,
    });
    const t = await exchangeAt(a(), location.searchParams.get('code') ?? '');
    const r1 = String(t.json['refresh_token']);
    const rotated = await tokenRequest(a(), {
      grant_type: 'refresh_token',
      refresh_token: r1,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(rotated.status).toBe(200);
    const reuse = await tokenRequest(b(), {
      grant_type: 'refresh_token',
      refresh_token: r1,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(reuse.json['error']).toBe('invalid_grant');
    const r2 = await tokenRequest(a(), {
      grant_type: 'refresh_token',
      refresh_token: String(rotated.json['refresh_token']),
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(r2.json['error']).toBe('invalid_grant');
  });

  it('a client added to the registry file is served without a restart', async () => {
    const q = new URLSearchParams({
      client_id: 'late-client',
      redirect_uri: stack.redirectUri,
      response_type: 'code',
    });
    expect((await fetch(`${b()}/auth?${q}`, { redirect: 'manual' })).status).toBe(400);
    const registry = {
      clients: [
        ...stack.clients.clients,
        {
          client_id: 'late-client',
          client_secret_hash: hashClientSecret('late-secret'),
          display_name: 'Late',
          redirect_uris: [stack.redirectUri],
          scopes: ['profile'],
          grant_types: ['authorization_code'],
          token_endpoint_auth_method: 'client_secret_post',
        },
      ],
    };
    writeFileSync(stack.clientsFile, JSON.stringify(registry));
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await fetch(`${b()}/auth?${q}`, { redirect: 'manual' })).status;
    }
    expect(status).toBe(200);
  });

  it('key rotation: new tokens carry the new kid, tokens signed with the old key stay valid at /me', async () => {
    const get = async (issuerUrl: string) => {
      const { location } = await authorize({
        issuer: issuerUrl,
        clientId: 'demo-client',
        redirectUri: stack.redirectUri,
      });
      return String(
        (await exchangeAt(issuerUrl, location.searchParams.get('code') ?? '')).json['access_token'],
      );
    };
    const oldToken = await get(a());
    const oldKid = stack.keys.keys[0]?.kid;
    expect(kidOf(oldToken)).toBe(oldKid);
    expect(
      (
        await fetch(`${stack.userServiceUrl}/me`, {
          headers: { authorization: `Bearer ${oldToken}` },
        })
      ).status,
    ).toBe(200);

    const rotated = await generateSigningJwks({ alg: 'RS256', existing: stack.keys });
    writeFileSync(path.join(stack.dir, 'keys.json'), JSON.stringify(rotated));
    let jwks: { keys: { kid: string }[] } = { keys: [] };
    for (let i = 0; i < 50 && jwks.keys.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      jwks = (await (await fetch(`${b()}/jwks.json`)).json()) as typeof jwks;
    }
    expect(jwks.keys.map((k) => k.kid)).toEqual(rotated.keys.map((k) => k.kid));
    await new Promise((r) => setTimeout(r, 1100)); // the user service refetches a JWKS at most once a second
    const newToken = await get(b());
    expect(kidOf(newToken)).toBe(rotated.keys[0]?.kid);
    expect(
      JSON.parse(Buffer.from(newToken.split('.')[0] ?? '', 'base64url').toString()),
    ).toMatchObject({ alg: 'RS256' });
    for (const token of [oldToken, newToken]) {
      expect(
        (
          await fetch(`${stack.userServiceUrl}/me`, {
            headers: { authorization: `Bearer ${token}` },
          })
        ).status,
      ).toBe(200);
    }
  });
});
