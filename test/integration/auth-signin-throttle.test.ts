// Sign-in throttling and password hashing under attack, against the real server (behind a trusted
// proxy, so X-Forwarded-For names the client address). Before, ten wrong guesses from one address
// locked the user out from every address, IPv6 clients got a fresh budget per address, and thirty
// parallel sign-ins queued on the thread pool without bound.
import { describe, expect, it } from 'vitest';
import { authServerConfigSchema } from '../../lib/config/auth-server.ts';
import { authorize, openSignIn, tokenRequest, trySignIn } from '../harness/auth-flow.ts';
import { perDescribe } from '../harness/fixtures.ts';
import { SECRETS, type Stack } from '../harness/auth-stack.ts';

function signIn(stack: Stack) {
  return (username: string, password: string, address: string): Promise<Response> =>
    trySignIn(stack.issuer, stack.redirectUri, username, password, { 'x-forwarded-for': address });
}

const THROTTLE_SETTINGS = [
  'AUTH_SIGNIN_USER_ADDRESS_BURST',
  'AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE',
  'AUTH_SIGNIN_USER_BURST',
  'AUTH_SIGNIN_USER_PER_MINUTE',
  'AUTH_SIGNIN_ADDRESS_BURST',
  'AUTH_SIGNIN_ADDRESS_PER_MINUTE',
] as const;

/** The default value of each named setting, as the environment would spell it. */
function defaultsOf(
  names: readonly (keyof typeof authServerConfigSchema.shape)[],
): Record<string, string> {
  return Object.fromEntries(
    names.map((name) => [name, String(authServerConfigSchema.shape[name].parse(undefined))]),
  );
}

const statuses = async (attempts: (() => Promise<Response>)[]) => {
  const out: number[] = [];
  for (const attempt of attempts) out.push((await attempt()).status);
  return out;
};

describe('sign-in throttle at its default budgets', () => {
  const stack = perDescribe((start) =>
    start.authStack({
      // The configuration's own defaults, set over the test stack's generous ones.
      authEnv: { AUTH_TRUST_PROXY: 'true', ...defaultsOf(THROTTLE_SETTINGS) },
    }),
  );

  it('guessing from one address locks out that address only: the owner still signs in from hers', async () => {
    const attempt = signIn(stack);
    const guesses = await statuses(
      Array.from({ length: 14 }, () => () => attempt('bob', 'guess', '198.51.100.9')),
    );
    expect(guesses).toEqual([...Array<number>(10).fill(303), 429, 429, 429, 429]);
    const owner = await attempt('bob', 'builder', '192.0.2.44');
    expect(owner.status).toBe(303);
    expect(new URL(owner.headers.get('location') ?? '', stack.issuer).pathname).toBe(
      '/auth/consent',
    );
  });
});

describe('sign-in throttle across addresses', () => {
  const stack = perDescribe((start) =>
    start.authStack({
      authEnv: {
        AUTH_TRUST_PROXY: 'true',
        AUTH_SIGNIN_USER_ADDRESS_BURST: '2',
        AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: '1',
        AUTH_SIGNIN_USER_BURST: '5',
        AUTH_SIGNIN_USER_PER_MINUTE: '1',
      },
    }),
  );

  it('IPv6 clients share one budget per /64', async () => {
    const attempt = signIn(stack);
    expect(
      await statuses([
        () => attempt('alice', 'guess', '2001:db8:1:2::1'),
        () => attempt('alice', 'guess', '2001:db8:1:2::1'),
      ]),
    ).toEqual([303, 303]);
    // Another address in the same /64 is the same client; the next /64 is another.
    expect((await attempt('alice', 'guess', '2001:db8:1:2:ffff:ffff:ffff:9')).status).toBe(429);
    expect((await attempt('alice', 'guess', '2001:db8:1:3::1')).status).toBe(303);
  });

  it('a looser per-username budget still bounds guessing spread over many addresses', async () => {
    const attempt = signIn(stack);
    const spread = await statuses(
      Array.from({ length: 6 }, (_, i) => () => attempt('bob', 'guess', `203.0.113.${i + 1}`)),
    );
    expect(spread).toEqual([303, 303, 303, 303, 303, 429]);
  });
});

describe('bounded password hashing', () => {
  const stack = perDescribe((start) =>
    start.authStack({
      authEnv: {
        AUTH_PASSWORD_HASH_CONCURRENCY: '1',
        AUTH_PASSWORD_HASH_QUEUE: '2',
        AUTH_PASSWORD_HASH_PER_ADDRESS: '30',
      },
    }),
  );

  it('30 parallel sign-ins: at most 1 hashing and 2 waiting, the rest 503 with Retry-After; tokens are still served', async () => {
    const { location } = await authorize({
      issuer: stack.issuer,
      clientId: 'demo-client',
      redirectUri: stack.redirectUri,
    });
    const issued = await tokenRequest(stack.issuer, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code') ?? '',
      redirect_uri: stack.redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    let refreshToken = String(issued.json['refresh_token']);

    const forms = await Promise.all(
      Array.from({ length: 30 }, () => openSignIn(stack.issuer, stack.redirectUri)),
    );
    const refreshes: number[] = [];
    const signIns = Promise.all(
      forms.map(({ b, interaction, csrf }) =>
        b.post(`${stack.issuer}/auth/sign-in`, {
          interaction,
          csrf,
          username: 'alice',
          password: 'wonderland',
        }),
      ),
    );
    for (let i = 0; i < 3; i++) {
      const refreshed = await tokenRequest(stack.issuer, {
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: 'demo-client',
        client_secret: SECRETS.post,
      });
      refreshes.push(refreshed.status);
      refreshToken = String(refreshed.json['refresh_token']);
    }
    const answers = await signIns;
    expect(refreshes).toEqual([200, 200, 200]);

    const busy = answers.filter((r) => r.status === 503);
    expect(answers.filter((r) => r.status === 303).length + busy.length).toBe(30);
    expect(busy.length).toBeGreaterThan(0);
    for (const r of busy) {
      expect(r.headers.get('retry-after')).toBe('1');
      expect(await r.text()).toContain('Many people are signing in right now');
    }
    expect(
      stack.programs[0]?.lines.some(
        (l) => l.includes('"level":40') && l.includes('password gate is full'),
      ),
    ).toBe(true);
  });
});
