// Fuzzing the authorization server's /auth, sign-in and /token parameters, real process, Redis
// store run as the chart runs it (as in production with several replicas):
//   /auth  — never a 5xx; a redirect only ever goes to a registered redirect URI exactly (or stays
//            on the server); reflected values are escaped; nothing is stored.
//   sign-in — interactions, binding cookies and CSRF tokens mixed between two browsers (planted,
//            altered, truncated): only a browser's own three sign in; anything else is a 400/403
//            page and stores nothing.
//   /token — never a 5xx; a token only for an exactly valid request: the client the code was
//            issued to, authenticated as registered, the same redirect_uri, the right PKCE
//            verifier, a code used once; every token's client_id claim is the requesting client.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { decodeJwt } from 'jose';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';
import { chartRedisArgs } from '../harness/redis.ts';
import { recordCases } from '../harness/reliability-counts.ts';
import { authorize, openSignIn, pkce } from '../harness/auth-flow.ts';
import { SECRETS } from '../harness/auth-stack.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const XSS = '<script>alert(1)</script>"\'><img src=x onerror=alert(1)>';

describe('fuzzing /auth and /token', () => {
  const password = 'fuzz-auth-redis-password';
  const redis = perDescribe((start) =>
    start.redis(chartRedisArgs('auth-redis', { REDIS_PASSWORD: password }), { password }),
  );
  const stack = perDescribe((start) =>
    start.authStack({
      redisUrl: redis.url,
      authEnv: {
        AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: '1000000',
        AUTH_SIGNIN_USER_PER_MINUTE: '1000000',
        AUTH_SIGNIN_ADDRESS_PER_MINUTE: '1000000',
      },
    }),
  );
  /** Every redirect URI a client registered. */
  const registered = perDescribe(
    async () => new Set(stack.clients.clients.flatMap((c) => c.redirect_uris)),
  );

  // ---- /auth -----------------------------------------------------------------------------------

  const clientId = fc.constantFrom(
    'demo-client',
    'basic-client',
    'public-client',
    'other-client',
    'unknown',
    '',
    'DEMO-CLIENT',
    'demo-client ',
    'demo-client\u0000',
    'x'.repeat(5000),
    '../demo-client',
  );
  const redirect = () =>
    fc.constantFrom(
      stack.redirectUri,
      `${stack.redirectUri}/`,
      `${stack.redirectUri}?x=1`,
      `${stack.redirectUri}#frag`,
      stack.redirectUri.toUpperCase(),
      stack.redirectUri.replace('127.0.0.1', 'localhost'),
      stack.redirectUri.replace('http:', 'https:'),
      'https://evil.example/callback',
      '//evil.example/callback',
      'javascript:alert(1)',
      'data:text/html,hi',
      `${stack.redirectUri}@evil.example`,
      `http://127.0.0.1:1@evil.example/callback`,
      encodeURIComponent(stack.redirectUri),
      '',
      '/callback',
    );
  const optional = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
  const challenge = fc.oneof(
    fc.constant(pkce().challenge),
    fc.string({ maxLength: 60 }),
    fc.constant('a'.repeat(43)),
    fc.constant(''),
  );
  const authParams = () =>
    fc.record({
      client_id: optional(fc.oneof(clientId, fc.array(clientId, { minLength: 2, maxLength: 3 }))),
      redirect_uri: optional(
        fc.oneof(redirect(), fc.array(redirect(), { minLength: 2, maxLength: 2 })),
      ),
      response_type: optional(
        fc.constantFrom('code', 'token', 'code token', 'id_token', '', 'CODE', 'code '),
      ),
      scope: optional(
        fc.constantFrom(
          'profile',
          'profile email',
          'email',
          'openid',
          'admin',
          '',
          '  ',
          'profile\u0000',
          XSS,
          'profile profile',
        ),
      ),
      state: optional(
        fc.oneof(fc.string({ maxLength: 100 }), fc.constant(XSS), fc.constant('s'.repeat(3000))),
      ),
      code_challenge: optional(challenge),
      code_challenge_method: optional(fc.constantFrom('S256', 'plain', 's256', '', 'none')),
      extra: optional(
        fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), fc.string({ maxLength: 20 }), {
          maxKeys: 3,
        }),
      ),
    });

  function authUrl(p: Record<string, unknown>): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(p)) {
      if (v === undefined) continue;
      if (k === 'extra')
        for (const [ek, ev] of Object.entries(v as Record<string, string>)) q.append(ek, ev);
      else if (Array.isArray(v)) for (const x of v) q.append(k, String(x));
      else q.append(k, String(v));
    }
    return `${stack.issuer}/auth?${q}`;
  }

  it('/auth: never a 5xx, never a redirect to an unregistered address, reflected values escaped', async () => {
    await fc.assert(
      fc.asyncProperty(authParams(), async (p) => {
        recordCases('auth fuzz: /auth parameter sets', 1);
        const res = await fetch(authUrl(p), { redirect: 'manual' });
        const body = await res.text();
        expect(res.status, `GET ${authUrl(p).slice(0, 300)}`).toBeLessThan(500);
        if (res.status >= 300 && res.status < 400) {
          const location = new URL(res.headers.get('location') ?? '', stack.issuer);
          const target = `${location.origin}${location.pathname}`;
          const internal = location.origin === stack.issuer;
          expect(internal || registered.has(target), `redirect to ${location}`).toBe(true);
          // A redirect to the client carries exactly the redirect_uri sent, which is registered.
          if (!internal) expect(p.redirect_uri).toBe(target);
        }
        // Nothing reflected unescaped.
        expect(body).not.toContain('<script>alert(1)</script>');
        expect(body).not.toContain('<img src=x');
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('/auth: raw query strings of random bytes are never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 300 }), async (raw) => {
        recordCases('auth fuzz: /auth raw queries', 1);
        const encoded = [...Buffer.from(raw, 'utf8')]
          .map((b) =>
            b > 0x20 && b < 0x7f && b !== 0x23
              ? String.fromCharCode(b)
              : `%${b.toString(16).padStart(2, '0')}`,
          )
          .join('');
        const res = await fetch(`${stack.issuer}/auth?${encoded}`, { redirect: 'manual' });
        await res.arrayBuffer();
        expect(res.status).toBeLessThan(500);
        if (res.status >= 300 && res.status < 400) {
          const location = new URL(res.headers.get('location') ?? '', stack.issuer);
          expect(
            location.origin === stack.issuer ||
              registered.has(`${location.origin}${location.pathname}`),
          ).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });

  // ---- /token ----------------------------------------------------------------------------------

  interface Issued {
    readonly clientId: string;
    readonly code: string;
    readonly verifier?: string;
  }

  /** Runs the front channel and returns a fresh code (with PKCE unless told otherwise). */
  async function issue(
    client: 'demo-client' | 'basic-client' | 'public-client',
    withPkce: boolean,
  ): Promise<Issued> {
    const p = pkce();
    const { location } = await authorize({
      issuer: stack.issuer,
      clientId: client,
      redirectUri: stack.redirectUri,
      ...(withPkce ? { challenge: p.challenge } : {}),
    });
    const code = location.searchParams.get('code');
    if (code === null) throw new Error(`no code: ${location}`);
    return { clientId: client, code, ...(withPkce ? { verifier: p.verifier } : {}) };
  }

  const secretOf: Record<string, string | undefined> = {
    'demo-client': SECRETS.post,
    'basic-client': SECRETS.basic,
    'other-client': SECRETS.other,
    'public-client': undefined,
  };

  /** The exactly valid request for a code. */
  function validRequest(i: Issued): { params: Record<string, string>; basic?: [string, string] } {
    const params: Record<string, string> = {
      grant_type: 'authorization_code',
      code: i.code,
      redirect_uri: stack.redirectUri,
    };
    if (i.verifier !== undefined) params.code_verifier = i.verifier;
    if (i.clientId === 'basic-client') return { params, basic: ['basic-client', SECRETS.basic] };
    params.client_id = i.clientId;
    const secret = secretOf[i.clientId];
    if (secret !== undefined) params.client_secret = secret;
    return { params };
  }

  /** harmless: the mutated request is still exactly valid (so it must succeed). */
  type Mutation = {
    name: string;
    harmless: boolean | ((i: Issued) => boolean);
    apply: (
      r: ReturnType<typeof validRequest>,
      i: Issued,
      other: Issued,
    ) => ReturnType<typeof validRequest>;
  };
  const m = (name: string, harmless: Mutation['harmless'], apply: Mutation['apply']): Mutation => ({
    name,
    harmless,
    apply,
  });
  const flip = (s: string) => `${s.slice(0, -1)}${s.endsWith('A') ? 'B' : 'A'}`;
  const mutations: Mutation[] = [
    m('none', true, (r) => r),
    m('grant_type authorization_token (the specification alias)', true, (r) => ({
      ...r,
      params: { ...r.params, grant_type: 'authorization_token' },
    })),
    m('an unknown extra parameter', true, (r) => ({ ...r, params: { ...r.params, foo: 'bar' } })),
    // Without PKCE another code of the same client is just as valid; with PKCE the verifier binds it.
    m(
      'code of another flow of the same client',
      (i) => i.verifier === undefined,
      (r, _i, other) => ({ ...r, params: { ...r.params, code: other.code } }),
    ),
    m('code with one character changed', false, (r) => ({
      ...r,
      params: { ...r.params, code: flip(r.params.code as string) },
    })),
    m('code missing', false, (r) => ({
      ...r,
      params: Object.fromEntries(Object.entries(r.params).filter(([k]) => k !== 'code')),
    })),
    m('code empty', false, (r) => ({ ...r, params: { ...r.params, code: '' } })),
    m('redirect_uri different', false, (r) => ({
      ...r,
      params: { ...r.params, redirect_uri: `${stack.redirectUri}/x` },
    })),
    m('redirect_uri missing', false, (r) => ({
      ...r,
      params: Object.fromEntries(Object.entries(r.params).filter(([k]) => k !== 'redirect_uri')),
    })),
    m('code_verifier wrong', false, (r, i) =>
      i.verifier === undefined
        ? { ...r, params: { ...r.params, code_verifier: pkce().verifier } }
        : { ...r, params: { ...r.params, code_verifier: pkce().verifier } },
    ),
    m('code_verifier of another flow', false, (r, _i, other) => ({
      ...r,
      params: { ...r.params, code_verifier: other.verifier ?? pkce().verifier },
    })),
    m('code_verifier = the challenge (plain downgrade)', false, (r, i) => ({
      ...r,
      params: {
        ...r.params,
        code_verifier: createHash('sha256')
          .update(i.verifier ?? 'x')
          .digest('base64url'),
      },
    })),
    m('code_verifier missing', false, (r, i) =>
      i.verifier === undefined
        ? { ...r, params: { ...r.params, code_verifier: pkce().verifier } }
        : {
            ...r,
            params: Object.fromEntries(
              Object.entries(r.params).filter(([k]) => k !== 'code_verifier'),
            ),
          },
    ),
    m('client_id of another client (with its own valid secret)', false, (r) => ({
      params: { ...r.params, client_id: 'other-client', client_secret: SECRETS.other },
    })),
    m('Basic as another client', false, (r) => ({
      params: Object.fromEntries(
        Object.entries(r.params).filter(([k]) => k !== 'client_id' && k !== 'client_secret'),
      ),
      basic: ['other-client', SECRETS.other],
    })),
    m('client_secret wrong', false, (r, i) =>
      i.clientId === 'basic-client'
        ? { ...r, basic: ['basic-client', 'wrong-secret'] }
        : { ...r, params: { ...r.params, client_secret: 'wrong-secret-0123456789' } },
    ),
    m('client authentication missing', false, (r, i) =>
      i.clientId === 'public-client'
        ? { params: { ...r.params, client_id: 'demo-client' } }
        : {
            params: Object.fromEntries(
              Object.entries(r.params).filter(([k]) => k !== 'client_secret'),
            ),
          },
    ),
    m('grant_type wrong', false, (r) => ({
      ...r,
      params: { ...r.params, grant_type: 'password' },
    })),
    m('grant_type refresh_token with the code', false, (r) => ({
      ...r,
      params: { ...r.params, grant_type: 'refresh_token', refresh_token: r.params.code as string },
    })),
    m('client_id with a trailing space', false, (r, i) =>
      i.clientId === 'basic-client'
        ? { ...r, basic: ['basic-client ', SECRETS.basic] }
        : { ...r, params: { ...r.params, client_id: `${i.clientId} ` } },
    ),
    m('huge code', false, (r) => ({ ...r, params: { ...r.params, code: 'c'.repeat(100_000) } })),
  ];

  const encodings = ['form', 'json', 'form-duplicate-code'] as const;

  async function send(r: ReturnType<typeof validRequest>, encoding: (typeof encodings)[number]) {
    const headers: Record<string, string> = {};
    if (r.basic !== undefined)
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(r.basic[0])}:${encodeURIComponent(r.basic[1])}`).toString('base64')}`;
    let body: string;
    if (encoding === 'json') {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(r.params);
    } else {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      const q = new URLSearchParams(r.params);
      if (encoding === 'form-duplicate-code' && r.params.code !== undefined)
        q.append('code', r.params.code);
      body = q.toString();
    }
    const res = await fetch(`${stack.issuer}/token`, { method: 'POST', headers, body });
    const text = await res.text();
    return {
      status: res.status,
      text,
      json: (() => {
        try {
          return JSON.parse(text) as Record<string, unknown>;
        } catch {
          return {};
        }
      })(),
    };
  }

  it('/token: a token only for an exactly valid request, for the right client; never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('demo-client', 'basic-client', 'public-client') as fc.Arbitrary<
          'demo-client' | 'basic-client' | 'public-client'
        >,
        fc.boolean(),
        fc.constantFrom(...mutations),
        fc.constantFrom(...encodings),
        async (client, withPkceChoice, mutation, encoding) => {
          recordCases('auth fuzz: /token requests', 1);
          const withPkce = client === 'public-client' ? true : withPkceChoice;
          const issued = await issue(client, withPkce);
          const other = await issue(client, withPkce);
          const request = mutation.apply(validRequest(issued), issued, other);
          const r = await send(request, encoding);
          const label = `${client} pkce=${withPkce} ${mutation.name} ${encoding}: ${r.status} ${r.text.slice(0, 200)}`;
          expect(r.status, label).toBeLessThan(500);
          const harmless =
            typeof mutation.harmless === 'function' ? mutation.harmless(issued) : mutation.harmless;
          const shouldSucceed = harmless && encoding !== 'form-duplicate-code';
          if (shouldSucceed) {
            expect(r.status, label).toBe(200);
            const claims = decodeJwt(String(r.json.access_token));
            expect(claims.client_id, label).toBe(client);
            // Single use: the very same request again is refused.
            const again = await send(request, encoding);
            expect(again.status, `replay: ${label}`).toBe(400);
            expect(again.json.error).toBe('invalid_grant');
          } else {
            expect(r.status, label).not.toBe(200);
            expect(r.json.access_token, label).toBeUndefined();
            expect(typeof r.json.error, label).toBe('string');
          }
          // The other flow's code still works for its own client, unless this case redeemed it
          // (a request that fails the checks against a code never consumes it).
          if (mutation.name !== 'code of another flow of the same client') {
            const ok = await send(validRequest(other), 'form');
            expect(ok.status, `the untouched code of ${client} after: ${label}`).toBe(200);
            expect(decodeJwt(String(ok.json.access_token)).client_id).toBe(client);
          }
        },
      ),
      { numRuns: Math.ceil((RUNS * 2) / 3) },
    );
  });

  it('/token: random bodies and content types are never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          'application/x-www-form-urlencoded',
          'application/json',
          'text/plain',
          'multipart/form-data; boundary=x',
          'application/json; charset=latin1',
          '',
        ),
        fc.oneof(
          fc.string({ maxLength: 500 }),
          fc.json(),
          fc.constantFrom(
            '{',
            '[]',
            'null',
            '"x"',
            'grant_type=authorization_code&code=',
            '%zz=%zz',
            'a=1&a=2&a=3',
          ),
        ),
        fc.option(
          fc.constantFrom(
            'Basic',
            'Basic !!!',
            'Basic ' + Buffer.from('demo-client').toString('base64'),
            'Bearer x',
            `Basic ${Buffer.from('%zz:%zz').toString('base64')}`,
          ),
          { nil: undefined },
        ),
        async (type, body, authorization) => {
          recordCases('auth fuzz: /token random bodies', 1);
          const headers: Record<string, string> = {};
          if (type !== '') headers['content-type'] = type;
          if (authorization !== undefined) headers.authorization = authorization;
          const res = await fetch(`${stack.issuer}/token`, { method: 'POST', headers, body });
          const text = await res.text();
          expect(
            res.status,
            `${type} ${authorization} ${body.slice(0, 100)}: ${text.slice(0, 200)}`,
          ).toBeLessThan(500);
          expect(res.status).not.toBe(200);
        },
      ),
      { numRuns: RUNS * 2 },
    );
  });

  // ---- sign-in forms: interactions, cookies and CSRF tokens mixed between browsers --------------

  /** Commands that only read (or are this test's own); every other call counts as a write. */
  const READS = new Set([
    'get',
    'hget',
    'hmget',
    'hgetall',
    'mget',
    'exists',
    'ttl',
    'pttl',
    'type',
    'smembers',
    'scard',
    'dbsize',
    'info',
    'ping',
    'client',
    'hello',
    'select',
    'command',
    'script',
    'config',
  ]);
  /** Write commands Redis has executed so far (INFO commandstats; keys expiring do not count). */
  async function writeCalls(admin: Redis): Promise<number> {
    let total = 0;
    for (const m of (await admin.info('commandstats')).matchAll(
      /^cmdstat_([a-z|]+):calls=(\d+)/gm,
    )) {
      if (!READS.has((m[1] ?? '').split('|')[0] ?? '')) total += Number(m[2]);
    }
    return total;
  }

  it("/auth/sign-in: only a browser's own interaction, cookie and CSRF token sign in; a failure stores nothing; never a 5xx", async () => {
    const admin = new Redis(redis.url);
    const open = async () => {
      const { b, interaction, csrf } = await openSignIn(stack.issuer, stack.redirectUri);
      return { cookie: b.jar.header(), interaction, csrf };
    };
    const flipAt = (v: string, i: number) =>
      `${v.slice(0, i)}${v[i] === 'A' ? 'B' : 'A'}${v.slice(i + 1)}`;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('own', 'other', 'altered', 'truncated', 'stored-shaped', 'garbage'),
          fc.constantFrom('own', 'other', 'none', 'garbage'),
          fc.constantFrom('own', 'other', 'empty'),
          fc.boolean(),
          fc.nat(),
          async (which, cookieOf, csrfOf, rightPassword, seed) => {
            recordCases('auth fuzz: sign-in form mixes', 1);
            const [a, b] = [await open(), await open()];
            const interaction = {
              own: a.interaction,
              other: b.interaction,
              altered: flipAt(a.interaction, seed % a.interaction.length),
              truncated: a.interaction.slice(0, -1 - (seed % 20)),
              'stored-shaped': 'A'.repeat(43),
              garbage: `x.${seed}..y`,
            }[which];
            const cookie = {
              own: a.cookie,
              other: b.cookie,
              none: '',
              garbage: 'portcullis_browser=AAAA',
            }[cookieOf];
            const csrf = { own: a.csrf, other: b.csrf, empty: '' }[csrfOf];
            const writesBefore = await writeCalls(admin);
            const res = await fetch(`${stack.issuer}/auth/sign-in`, {
              method: 'POST',
              redirect: 'manual',
              headers: {
                'content-type': 'application/x-www-form-urlencoded',
                ...(cookie === '' ? {} : { cookie }),
              },
              body: new URLSearchParams({
                interaction,
                csrf,
                username: 'alice',
                password: rightPassword ? 'wonderland' : 'wrong',
              }),
            });
            await res.arrayBuffer();
            const label = `${which}/${cookieOf}/${csrfOf}/${rightPassword}: ${res.status} ${res.headers.get('location') ?? ''}`;
            expect(res.status, label).toBeLessThan(500);
            // 'altered' may flip a character the base64url decoding ignores (the last one's low bits).
            // Browser b's own three are just as valid as a's.
            const own =
              ((which === 'own' || (which === 'altered' && res.status === 303)) &&
                cookieOf === 'own' &&
                csrfOf === 'own') ||
              (which === 'other' && cookieOf === 'other' && csrfOf === 'other');
            if (!own) {
              expect([400, 403], label).toContain(res.status);
              expect(await writeCalls(admin), label).toBe(writesBefore);
            } else if (rightPassword) {
              expect(res.status, label).toBe(303);
              expect(
                new URL(res.headers.get('location') ?? '', stack.issuer).pathname,
                label,
              ).toMatch(/^\/auth\/consent$|^\/callback$/);
            } else {
              expect(res.status, label).toBe(303);
              expect(res.headers.get('location'), label).toMatch(/^\/auth\/sign-in\?interaction=/);
            }
          },
        ),
        { numRuns: RUNS },
      );
    } finally {
      admin.disconnect();
    }
  });

  it('/auth: a fuzzed flood of authorization requests stores nothing in Redis', async () => {
    const admin = new Redis(redis.url);
    try {
      const before = await writeCalls(admin);
      await fc.assert(
        fc.asyncProperty(authParams(), async (p) => {
          await (await fetch(authUrl(p), { redirect: 'manual' })).arrayBuffer();
        }),
        { numRuns: RUNS },
      );
      expect(await writeCalls(admin)).toBe(before);
    } finally {
      admin.disconnect();
    }
  });

  it('logged no 500 and the auth server is still up', async () => {
    const auth = stack.programs.find((p) => p.name === 'auth-server-0');
    expect(auth?.exited()).toBe(false);
    expect(auth?.lines.filter((l) => /"statusCode":5\d\d/.test(l)) ?? []).toEqual([]);
  });
});
