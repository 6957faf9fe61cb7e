// Sign-in and consent pages as a person uses them, in Debian's Chromium via playwright-core: the
// demo client, the auth server, the sidecar and the user service run as real processes. Twice:
// with the sidecar keyed on the USER-ID header, and on the verified access token's subject.
// Screenshots land in test-results/screenshots/ (kept as test artefacts).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';
import { repoRoot } from '../harness/programs.ts';

const shots = path.join(repoRoot, 'test-results', 'screenshots');

describe.each(['header', 'jwt'] as const)(
  'sign-in in the browser, gateway keyed by %s',
  (limitKey) => {
    const stack = perDescribe((start) => start.authStack({ demoClient: true, limitKey }));
    const browser = perDescribe(async (start) => {
      mkdirSync(shots, { recursive: true });
      const launched = await chromium.launch({
        executablePath: '/usr/bin/chromium',
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
        ],
      });
      start.defer(() => launched.close());
      return launched;
    });

    /** A fresh browser profile (no cookies) that records every page it shows. */
    async function freshPage(): Promise<{ page: Page; visited: string[] }> {
      const context = await browser.newContext();
      const page = await context.newPage();
      const visited: string[] = [];
      page.on('framenavigated', (frame) => {
        if (frame === page.mainFrame()) visited.push(new URL(frame.url()).pathname);
      });
      return { page, visited };
    }

    async function signIn(page: Page, username: string, password: string, shot: string) {
      await page.goto(stack.demoClientUrl ?? '');
      await page.click('#sign-in');
      await page.waitForSelector('#sign-in-title');
      expect(new URL(page.url()).origin).toBe(stack.issuer);
      expect(await page.textContent('.lead')).toContain('Demo <Client>');
      await page.screenshot({ path: path.join(shots, `${limitKey}-${shot}-1-sign-in.png`) });
      await page.fill('input[name=username]', username);
      await page.fill('input[name=password]', password);
      await page.click('button#sign-in');
    }

    it("first sign-in: the sign-in page, then the consent page, then the demo client shows alice's profile", async () => {
      const { page, visited } = await freshPage();
      await signIn(page, 'alice', 'wonderland', 'first');
      await page.waitForSelector('#consent-title');
      expect(await page.textContent('ul.scopes')).toContain('profile');
      await page.screenshot({ path: path.join(shots, `${limitKey}-first-2-consent.png`) });
      await page.click('#allow');
      await page.waitForSelector('#signed-in');
      expect(new URL(page.url()).origin).toBe(stack.demoClientUrl);
      expect(await page.textContent('#profile-name')).toBe('Alice Liddell');
      const profile = JSON.parse((await page.textContent('#profile')) ?? '{}') as Record<
        string,
        unknown
      >;
      expect(profile).toMatchObject({
        sub: 'alice',
        name: 'Alice Liddell',
        email: 'alice@example.com',
      });
      expect(await page.textContent('#claims')).toContain('"demo-client"');
      await page.screenshot({
        path: path.join(shots, `${limitKey}-first-3-profile.png`),
        fullPage: true,
      });
      expect(visited.filter((p) => p === '/auth/consent')).toHaveLength(1);
      await page.context().close();
    });

    it('second sign-in (new browser, consent remembered server-side): only the sign-in page', async () => {
      const { page, visited } = await freshPage();
      await signIn(page, 'alice', 'wonderland', 'second');
      await page.waitForSelector('#signed-in');
      expect(await page.textContent('#profile-name')).toBe('Alice Liddell');
      await page.screenshot({
        path: path.join(shots, `${limitKey}-second-2-profile.png`),
        fullPage: true,
      });
      expect(visited).not.toContain('/auth/consent');
      expect(visited).toContain('/auth');
      await page.context().close();
    });

    it('Deny ends on the demo client showing access_denied', async () => {
      const { page } = await freshPage();
      await signIn(page, 'bob', 'builder', 'deny');
      await page.waitForSelector('#consent-title');
      await page.click('#deny');
      await page.waitForSelector('#oauth-error');
      expect(new URL(page.url()).origin).toBe(stack.demoClientUrl);
      expect(await page.textContent('#oauth-error')).toBe('access_denied');
      await page.screenshot({ path: path.join(shots, `${limitKey}-deny-2-access-denied.png`) });
      await page.context().close();
    });

    it('a wrong password shows the error on the sign-in page', async () => {
      const { page } = await freshPage();
      await signIn(page, 'alice', 'not-the-password', 'wrong-password');
      await page.waitForSelector('#error-message');
      expect(await page.textContent('#error-message')).toContain('not correct');
      await page.screenshot({ path: path.join(shots, `${limitKey}-wrong-password-2-error.png`) });
      await page.context().close();
    });
  },
);
