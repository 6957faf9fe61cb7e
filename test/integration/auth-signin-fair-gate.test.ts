// The password-hashing gate shared fairly among client addresses, against the real server (behind
// a trusted proxy, so X-Forwarded-For names the client). Before, one address's 30 parallel
// sign-ins (its throttle budget allows 30 at once) filled the gate's queue, and everyone else got
// 503 until the flood had been hashed, one scrypt at a time; the flood could start again each minute.
import { describe, expect, it } from 'vitest';
import { openSignIn } from '../harness/auth-flow.ts';
import { perDescribe } from '../harness/fixtures.ts';

const FLOOD = '198.51.100.7';
const OTHER = '192.0.2.44';

describe('password gate: a fair share per client address', () => {
  // The gate of a 2-core node (one hash at a time, 16 waiting) and the default per-address share.
  const stack = perDescribe((start) =>
    start.authStack({
      authEnv: {
        AUTH_TRUST_PROXY: 'true',
        AUTH_PASSWORD_HASH_CONCURRENCY: '1',
        AUTH_PASSWORD_HASH_QUEUE: '16',
      },
    }),
  );

  it('during a flood of 30 parallel sign-ins from one address, a user at another address signs in', async () => {
    const forms = await Promise.all(
      Array.from({ length: 30 }, () => openSignIn(stack.issuer, stack.redirectUri)),
    );
    const other = await openSignIn(stack.issuer, stack.redirectUri);
    let firstRefusal: () => void = () => undefined;
    const refused = new Promise<void>((resolve) => (firstRefusal = resolve));
    const flood = Promise.all(
      forms.map(async ({ b, interaction, csrf }) => {
        const r = await b.post(
          `${stack.issuer}/auth/sign-in`,
          { interaction, csrf, username: 'alice', password: 'wonderland' },
          { 'x-forwarded-for': FLOOD },
        );
        if (r.status === 503) firstRefusal();
        return r.status;
      }),
    );
    // The flood has reached the gate (it refuses some of it): now the other user signs in.
    await refused;
    const started = performance.now();
    const answer = await other.b.post(
      `${stack.issuer}/auth/sign-in`,
      { interaction: other.interaction, csrf: other.csrf, username: 'bob', password: 'builder' },
      { 'x-forwarded-for': OTHER },
    );
    const tookMs = Math.round(performance.now() - started);
    const statuses = await flood;
    console.info(`the other address's sign-in took ${tookMs} ms during the flood`);
    expect(answer.status).toBe(303);
    expect(new URL(answer.headers.get('location') ?? '', stack.issuer).pathname).toBe(
      '/auth/consent',
    );
    // The flooding address got its share (2 checked at once by default), the rest 503 + Retry-After at once.
    expect(statuses.filter((s) => s === 303).length).toBeLessThanOrEqual(2 + 1);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThanOrEqual(30 - 3);
  });
});
