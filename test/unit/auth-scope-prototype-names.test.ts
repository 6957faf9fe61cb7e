// Regression: a client may register any RFC 6749 scope token, including names of Object.prototype
// members. `claimsByScope['constructor']` used to resolve to the Object function, so issuing a
// token for scope `constructor` threw "is not iterable" (a 503 at the token endpoint) and the
// consent page printed the function as "undefined".
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { sendConsentPage } from '../../services/auth-server/pages/consent-page.ts';
import { releasedClaims, scopeDescription } from '../../services/auth-server/scopes.ts';

const PROTOTYPE_NAMES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

describe('scopes named like Object.prototype members', () => {
  it('release no claims and do not throw', () => {
    const profile = { name: 'Alice', email: 'a@example.com' };
    expect(releasedClaims(profile, PROTOTYPE_NAMES)).toEqual({});
    expect(releasedClaims(profile, ['profile', ...PROTOTYPE_NAMES])).toEqual({ name: 'Alice' });
  });

  it('have no description', () => {
    for (const scope of PROTOTYPE_NAMES) expect(scopeDescription(scope)).toBeUndefined();
    expect(scopeDescription('profile')).toBe('Your name and basic profile');
  });

  it('render on the consent page as the bare scope token', async () => {
    const app = Fastify();
    app.get('/', async (_request, reply) =>
      sendConsentPage(reply, {
        interactionId: 'i',
        csrf: 'c',
        clientName: 'App',
        username: 'alice',
        scopes: PROTOTYPE_NAMES,
        redirectOrigin: 'https://app.example.com',
      }),
    );
    const res = await app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain('undefined');
    expect(res.body).not.toContain('function');
    expect(res.body).toContain('<li><code>constructor</code> </li>');
  });
});
