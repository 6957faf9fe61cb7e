// Test helper (not a test file): walks the authorization flow over plain HTTP the way a browser
// does (cookies kept, forms posted, redirects read but not followed), so integration tests can
// reach every branch without a browser.
import { createHash, randomBytes } from 'node:crypto';

export class CookieJar {
  readonly #cookies = new Map<string, string>();
  store(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair?.indexOf('=') ?? -1;
      if (pair !== undefined && eq > 0) this.#cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
  }
  header(): string {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function hidden(page: string, name: string): string | undefined {
  return new RegExp(`name="${name}" value="([^"]*)"`).exec(page)?.[1];
}

export interface Browserish {
  readonly jar: CookieJar;
  get(url: string): Promise<Response>;
  post(
    url: string,
    form: Record<string, string>,
    headers?: Record<string, string>,
  ): Promise<Response>;
}

export function browser(jar = new CookieJar()): Browserish {
  return {
    jar,
    async get(url) {
      const res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } });
      jar.store(res);
      return res;
    },
    async post(url, form, headers = {}) {
      const res = await fetch(url, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          ...headers,
          cookie: jar.header(),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams(form),
      });
      jar.store(res);
      return res;
    },
  };
}

/** A fresh browser at demo-client's sign-in page: the browser and the form's interaction and CSRF token. */
export async function openSignIn(
  issuer: string,
  redirectUri: string,
): Promise<{ b: Browserish; interaction: string; csrf: string }> {
  const b = browser();
  const page = await (
    await b.get(
      `${issuer}/auth?${new URLSearchParams({ client_id: 'demo-client', redirect_uri: redirectUri, response_type: 'code' })}`,
    )
  ).text();
  return { b, interaction: hidden(page, 'interaction') ?? '', csrf: hidden(page, 'csrf') ?? '' };
}

/** One sign-in attempt from a fresh browser (the POST's answer; redirects are not followed). */
export async function trySignIn(
  issuer: string,
  redirectUri: string,
  username: string,
  password: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  const { b, interaction, csrf } = await openSignIn(issuer, redirectUri);
  return b.post(`${issuer}/auth/sign-in`, { interaction, csrf, username, password }, headers);
}

export interface AuthorizeOptions {
  readonly issuer: string;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scope?: string;
  readonly state?: string;
  readonly challenge?: string;
  readonly username?: string;
  readonly password?: string;
  /** allow (default) or deny when the consent page shows. */
  readonly decision?: 'allow' | 'deny';
  readonly b?: Browserish;
}

export interface AuthorizeResult {
  /** The client redirect the flow ended with (query holds code or error, state, iss). */
  readonly location: URL;
  readonly consentShown: boolean;
}

/** GET /auth, sign in, consent when asked; returns the final redirect to the client. */
export async function authorize(o: AuthorizeOptions): Promise<AuthorizeResult> {
  const q = new URLSearchParams({
    client_id: o.clientId,
    redirect_uri: o.redirectUri,
    response_type: 'code',
    scope: o.scope ?? 'profile',
  });
  if (o.state !== undefined) q.set('state', o.state);
  if (o.challenge !== undefined) {
    q.set('code_challenge', o.challenge);
    q.set('code_challenge_method', 'S256');
  }
  return walk(`${o.issuer}/auth?${q}`, o);
}

/** Follows an authorization URL built elsewhere (e.g. by oauth4webapi) through sign-in and consent. */
export async function walk(
  authorizationUrl: string,
  o: Pick<AuthorizeOptions, 'username' | 'password' | 'decision' | 'b'> = {},
): Promise<AuthorizeResult> {
  const b = o.b ?? browser();
  const origin = new URL(authorizationUrl).origin;
  const first = await b.get(authorizationUrl);
  const page = await first.text();
  if (first.status !== 200)
    throw new Error(`GET /auth answered ${first.status}: ${page.slice(0, 300)}`);
  const signIn = await b.post(`${origin}/auth/sign-in`, {
    interaction: hidden(page, 'interaction') ?? '',
    csrf: hidden(page, 'csrf') ?? '',
    username: o.username ?? 'alice',
    password: o.password ?? 'wonderland',
  });
  if (signIn.status !== 303) throw new Error(`sign-in answered ${signIn.status}`);
  const next = new URL(signIn.headers.get('location') ?? '', origin);
  if (next.origin !== origin || !next.pathname.startsWith('/auth/consent'))
    return { location: next, consentShown: false };
  const consentPage = await (await b.get(next.toString())).text();
  const decided = await b.post(`${origin}/auth/consent`, {
    interaction: hidden(consentPage, 'interaction') ?? '',
    csrf: hidden(consentPage, 'csrf') ?? '',
    decision: o.decision ?? 'allow',
  });
  if (decided.status !== 303) throw new Error(`consent answered ${decided.status}`);
  return { location: new URL(decided.headers.get('location') ?? ''), consentShown: true };
}

export async function tokenRequest(
  issuer: string,
  body: Record<string, string>,
  options: { json?: boolean; basic?: [string, string] } = {},
) {
  const headers: Record<string, string> = {
    'content-type':
      options.json === true ? 'application/json' : 'application/x-www-form-urlencoded',
  };
  if (options.basic !== undefined)
    headers['authorization'] =
      `Basic ${Buffer.from(`${options.basic[0]}:${options.basic[1]}`).toString('base64')}`;
  const res = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers,
    body: options.json === true ? JSON.stringify(body) : new URLSearchParams(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  return { status: res.status, headers: res.headers, json };
}
