// Session fixation against the real server: an attacker who can plant cookies for the auth
// server's host starts an interaction, plants its cookie (and id) in the victim's browser and
// lets the victim sign in. Before, the binding cookie, the interaction id and the /consents
// session id all survived the sign-in, so the attacker completed consent (or read and revoked
// the victim's consents) as the victim. A sign-in now moves everything to a new id and cookie.
import { describe, expect, it } from 'vitest';
import { browser, CookieJar, hidden } from '../harness/auth-flow.ts';
import { stackOn } from '../harness/fixtures.ts';

/** A second browser holding a copy of another one's cookies (what planting them amounts to). */
function plantedCopy(jar: CookieJar): CookieJar {
  const copy = new CookieJar();
  const header = jar.header();
  copy.store(
    new Response(null, {
      headers: header
        .split('; ')
        .filter(Boolean)
        .map((c) => ['set-cookie', c] as [string, string]),
    }),
  );
  return copy;
}

describe.each(['memory', 'redis'] as const)('session fixation (%s store)', (store) => {
  const on = stackOn(store);

  it("a planted interaction: after the victim signs in, the attacker's cookie and id cannot reach the consent step", async () => {
    const attacker = browser();
    const q = new URLSearchParams({
      client_id: 'demo-client',
      redirect_uri: on.stack().redirectUri,
      response_type: 'code',
      scope: 'profile',
      state: 's',
    });
    const page = await (await attacker.get(`${on.stack().issuer}/auth?${q}`)).text();
    const id = hidden(page, 'interaction') ?? '';
    const csrf = hidden(page, 'csrf') ?? '';
    expect(id).not.toBe('');

    // The victim's browser carries the attacker's cookie and submits the attacker's sign-in page.
    const victim = browser(plantedCopy(attacker.jar));
    const signedIn = await victim.post(`${on.stack().issuer}/auth/sign-in`, {
      interaction: id,
      csrf,
      username: 'alice',
      password: 'wonderland',
    });
    expect(signedIn.status).toBe(303);
    const consentUrl = new URL(signedIn.headers.get('location') ?? '', on.stack().issuer);
    expect(consentUrl.pathname).toBe('/auth/consent');
    const renewedId = consentUrl.searchParams.get('interaction') ?? '';
    expect(renewedId).not.toBe(id);
    expect(signedIn.headers.getSetCookie().some((c) => c.startsWith('portcullis_browser='))).toBe(
      true,
    );

    // The attacker, with its cookie: neither the old id nor the new one (were it leaked) works.
    const withOldId = await attacker.get(
      `${on.stack().issuer}/auth/consent?interaction=${encodeURIComponent(id)}`,
    );
    expect(withOldId.status).toBe(400);
    const withNewId = await attacker.get(
      `${on.stack().issuer}/auth/consent?interaction=${encodeURIComponent(renewedId)}`,
    );
    expect(withNewId.status).toBe(403);
    // The victim carries on normally.
    const own = await victim.get(consentUrl.toString());
    expect(own.status).toBe(200);
    expect(await own.text()).toContain('consent-title');
  });

  it('a planted /consents session: after the victim signs in, the attacker still sees only a sign-in page', async () => {
    const attacker = browser();
    const page = await (await attacker.get(`${on.stack().issuer}/consents`)).text();
    const csrf = hidden(page, 'csrf') ?? '';
    const victim = browser(plantedCopy(attacker.jar));
    const signedIn = await victim.post(`${on.stack().issuer}/consents/sign-in`, {
      csrf,
      username: 'alice',
      password: 'wonderland',
    });
    expect(signedIn.status).toBe(303);
    const victimPage = await (await victim.get(`${on.stack().issuer}/consents`)).text();
    expect(victimPage).toContain('alice');
    const attackerPage = await (await attacker.get(`${on.stack().issuer}/consents`)).text();
    expect(attackerPage).not.toContain('alice');
    expect(hidden(attackerPage, 'csrf')).toBeDefined();
    expect(attackerPage).toMatch(/name="password"/);
  });
});
