// `make run` as a newcomer uses it: scripts/run-local.ts starts the local stack on its fixed ports
// (each program's local.ts), a person signs in at the demo client in Debian's Chromium, and the
// demo client's call to /me through the gateway shows alice's profile. Twice: with the sidecar
// keyed on the USER-ID header (the default) and with LIMIT_KEY=jwt, where it keys on the verified
// subject of the local auth server's tokens and refuses a request without one.
import { spawn, type ChildProcess } from 'node:child_process';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../harness/programs.ts';

const DEMO_CLIENT = 'http://localhost:3000';
const GATEWAY = 'http://localhost:8080';

async function answers(url: string, timeoutMs: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`make run exited with code ${child.exitCode} before ${url} answered`);
    const ok = await fetch(url).then(
      (r) => r.status < 500,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe.each(['header', 'jwt'] as const)('make run with LIMIT_KEY=%s', (limitKey) => {
  let stack: ChildProcess;
  let browser: Browser;
  const output: string[] = [];

  beforeAll(async () => {
    stack = spawn(process.execPath, ['scripts/run-local.ts'], {
      cwd: repoRoot,
      env: { ...process.env, LIMIT_KEY: limitKey },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    stack.stdout?.on('data', (c: Buffer) => output.push(c.toString('utf8')));
    stack.stderr?.on('data', (c: Buffer) => output.push(c.toString('utf8')));
    await answers(`${DEMO_CLIENT}/`, 60_000, stack);
    await answers('http://localhost:9090/readyz', 30_000, stack);
    browser = await chromium.launch({
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
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    if (stack !== undefined && stack.exitCode === null) {
      const exited = new Promise((resolve) => stack.once('exit', resolve));
      stack.kill('SIGINT'); // what Ctrl-C sends: run-local stops every program and exits
      await exited;
    }
  });

  it(`prints the sidecar's key source`, () => {
    expect(output.join('')).toContain(
      limitKey === 'jwt' ? 'key sub of a verified access token' : 'key USER-ID header',
    );
  });

  it('prints where OpenID Connect discovery is', () => {
    expect(output.join('')).toContain('http://localhost:9000/.well-known/openid-configuration');
  });

  it('signs alice in at the demo client with OpenID Connect, whose call to /me through the gateway shows her profile', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(DEMO_CLIENT);
    await page.click('#sign-in');
    await page.waitForSelector('#sign-in-title');
    await page.fill('input[name=username]', 'alice');
    await page.fill('input[name=password]', 'wonderland');
    await page.click('button#sign-in');
    await page.waitForSelector('#consent-title');
    await page.click('#allow');
    await page.waitForSelector('#signed-in');
    expect(await page.textContent('#profile-name')).toBe('Alice Liddell');
    // The demo client validated an id_token (nonce, aud) carrying the groups claim.
    const idToken = (await page.textContent('#id-token-claims')) ?? '';
    expect(idToken).toContain('"demo-client"');
    expect(idToken).toContain('["wonderland"]');
    await page.context().close();
  });

  it(
    limitKey === 'jwt'
      ? 'refuses a request without an access token: 401 problem+json, whatever USER-ID it names'
      : 'forwards a request keyed by its USER-ID header',
    async () => {
      const res = await fetch(`${GATEWAY}/healthcheck/ready`, { headers: { 'USER-ID': 'alice' } });
      if (limitKey === 'jwt') {
        expect(res.status).toBe(401);
        expect(res.headers.get('content-type')).toContain('application/problem+json');
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      } else {
        expect(res.status).toBe(200);
        expect(await res.text()).toBe('OK');
      }
    },
  );
});
