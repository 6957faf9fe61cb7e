// A JSON body with a repeated key is refused like a repeated form parameter (RFC 6749 3.1):
// before, JSON.parse kept the last value, so `{"code":"bogus","code":"<real>"}` redeemed the real
// code although the form equivalent was refused. Against the real server at /token, /revoke and
// /introspect, on the memory store and on a redis-server configured as the chart's.
import { describe, expect, it } from 'vitest';
import { authorize, tokenRequest } from '../harness/auth-flow.ts';
import { stackOn } from '../harness/fixtures.ts';
import { SECRETS } from '../harness/auth-stack.ts';

describe.each(['memory', 'redis'] as const)('repeated keys in a JSON body (%s store)', (store) => {
  const on = stackOn(store);

  const codeFor = async () => {
    const { location } = await authorize({
      issuer: on.stack().issuer,
      clientId: 'demo-client',
      redirectUri: on.stack().redirectUri,
    });
    const code = location.searchParams.get('code');
    if (code === null) throw new Error(`no code: ${location}`);
    return code;
  };
  /** POSTs raw JSON text: JSON.stringify cannot write a repeated key. */
  const postJson = async (path: string, text: string) => {
    const res = await fetch(`${on.stack().issuer}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: text,
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  const q = (v: string) => JSON.stringify(v);
  const rest = () =>
    `${q('grant_type')}:${q('authorization_code')},${q('redirect_uri')}:${q(on.stack().redirectUri)},${q('client_id')}:${q('demo-client')},${q('client_secret')}:${q(SECRETS.post)}`;

  it('/token refuses {"code":"bogus","code":"<real>"} with invalid_request and leaves the code usable', async () => {
    const code = await codeFor();
    const refused = await postJson(
      '/token',
      `{${q('code')}:${q('bogus')},${q('code')}:${q(code)},${rest()}}`,
    );
    expect(refused).toEqual({
      status: 400,
      json: { error: 'invalid_request', error_description: 'parameter repeated: code' },
    });
    const redeemed = await tokenRequest(
      on.stack().issuer,
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: on.stack().redirectUri,
        client_id: 'demo-client',
        client_secret: SECRETS.post,
      },
      { json: true },
    );
    expect(redeemed.status).toBe(200);
  });

  it('a key repeated under another spelling (a \\u escape) is the same key', async () => {
    const code = await codeFor();
    const refused = await postJson(
      '/token',
      `{${q('code')}:${q('bogus')},"\\u0063ode":${q(code)},${rest()}}`,
    );
    expect(refused).toEqual({
      status: 400,
      json: { error: 'invalid_request', error_description: 'parameter repeated: code' },
    });
  });

  it('repeated client credentials and tokens are refused at /token, /revoke and /introspect', async () => {
    const code = await codeFor();
    const creds = await postJson(
      '/token',
      `{${q('code')}:${q(code)},${rest()},${q('client_secret')}:${q('wrong')}}`,
    );
    expect(creds).toEqual({
      status: 400,
      json: { error: 'invalid_request', error_description: 'parameter repeated: client_secret' },
    });

    const tokens = await tokenRequest(on.stack().issuer, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: on.stack().redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(tokens.status).toBe(200);
    const access = String(tokens.json['access_token']);
    const client = `${q('client_id')}:${q('demo-client')},${q('client_secret')}:${q(SECRETS.post)}`;
    const revoke = await postJson(
      '/revoke',
      `{${q('token')}:${q('not-a-token')},${q('token')}:${q(access)},${client}}`,
    );
    expect(revoke).toEqual({
      status: 400,
      json: { error: 'invalid_request', error_description: 'parameter repeated: token' },
    });
    const introspect = await postJson(
      '/introspect',
      `{${q('token')}:${q(access)},${q('token')}:${q(access)},${client}}`,
    );
    expect(introspect).toEqual({
      status: 400,
      json: { error: 'invalid_request', error_description: 'parameter repeated: token' },
    });
    // The refused revocation revoked nothing.
    expect(await postJson('/introspect', `{${q('token')}:${q(access)},${client}}`)).toMatchObject({
      status: 200,
      json: { active: true },
    });
  });

  it('a JSON body without repeats still works, and nested repeats are still a malformed body', async () => {
    const ok = await tokenRequest(
      on.stack().issuer,
      {
        grant_type: 'authorization_code',
        code: await codeFor(),
        redirect_uri: on.stack().redirectUri,
        client_id: 'demo-client',
        client_secret: SECRETS.post,
      },
      { json: true },
    );
    expect(ok.status).toBe(200);
    const nested = await postJson(
      '/token',
      `{${q('code')}:{${q('a')}:${q('b')},${q('a')}:${q('c')}},${rest()}}`,
    );
    expect(nested).toEqual({
      status: 400,
      json: {
        error: 'invalid_request',
        error_description: 'the body must be a form or a JSON object of strings',
      },
    });
  });
});
