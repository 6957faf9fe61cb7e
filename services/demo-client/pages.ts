// The demo client's pages: server-rendered, every value escaped, no script; same headers as the
// auth server's pages (the HTML helpers are the auth server's, imported from their owner).
import type { FastifyReply } from 'fastify';
import { html, type Html } from '../../lib/web/html.ts';

const css = `:root{font-family:system-ui,sans-serif;color:#1d2430;background:#f4f1ea}
body{margin:0;display:flex;justify-content:center;padding:3rem 1rem}
main{background:#fff;max-width:44rem;width:100%;padding:2rem;border-radius:.5rem;box-shadow:0 1px 4px #0002}
button{padding:.6rem 1.3rem;font-size:1rem;border:0;border-radius:.3rem;background:#1f7a4d;color:#fff;cursor:pointer}
button.secondary{background:#e3e7ee;color:#1d2430}
pre{background:#f6f8fa;padding:1rem;overflow:auto;border-radius:.3rem}
table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.3rem .6rem;text-align:left;vertical-align:top}
.error{color:#a4161a;font-weight:600}`;

export const stylesheet = css;

/** `authOrigin`: the auth server, where the Sign in form's 303 leads (CSP form-action covers redirects). */
export function sendDemoPage(
  reply: FastifyReply,
  authOrigin: string,
  title: string,
  body: Html,
  status = 200,
): FastifyReply {
  const page = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Demo client</title><link rel="stylesheet" href="/static/demo.css"></head>
<body><main>
<p><a href="/">Portcullis demo client</a></p>
${body}
</main></body></html>
`;
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'self'; form-action 'self' ${authOrigin}; frame-ancestors 'none'; base-uri 'none'`,
    )
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send(page.html);
}

export function homePage(): Html {
  return html`<h1>Demo client</h1>
<p>This application signs you in with the Portcullis authorization server (OpenID Connect over the
OAuth 2.0 Authorization Code Grant with PKCE), then reads your profile from the user service through the gateway.</p>
<form method="post" action="/login"><button type="submit" id="sign-in">Sign in</button></form>`;
}

export interface SignedInView {
  readonly profile: unknown;
  readonly profileStatus: number;
  readonly claims: Record<string, unknown>;
  readonly scope: string;
  readonly hasRefreshToken: boolean;
  /** The validated id_token's claims when the sign-in was OpenID Connect. */
  readonly idTokenClaims?: Record<string, unknown>;
}

function claimRows(claims: Record<string, unknown>) {
  return Object.entries(claims).map(
    ([k, v]) => html`<tr><th>${k}</th><td><code>${JSON.stringify(v)}</code></td></tr>`,
  );
}

export function signedInPage(view: SignedInView): Html {
  const rows = claimRows(view.claims);
  const profileName =
    typeof view.profile === 'object' &&
    view.profile !== null &&
    'name' in view.profile &&
    typeof view.profile.name === 'string'
      ? view.profile.name
      : undefined;
  return html`<h1 id="signed-in">Signed in${profileName !== undefined ? html` as <span id="profile-name">${profileName}</span>` : html``}</h1>
<h2>Profile from <code>GET /me</code> (through the gateway, HTTP ${view.profileStatus})</h2>
<pre id="profile">${JSON.stringify(view.profile, null, 2)}</pre>
${
  view.idTokenClaims !== undefined
    ? html`<h2>ID token claims (OpenID Connect)</h2>
<table id="id-token-claims">${claimRows(view.idTokenClaims)}</table>`
    : html``
}
<h2>Access token claims</h2>
<p>scope <code id="scope">${view.scope}</code>${view.hasRefreshToken ? html`, with a refresh token` : html``}</p>
<table id="claims">${rows}</table>
<form method="post" action="/logout"><button type="submit" class="secondary">Sign out</button></form>`;
}

export function errorPage(error: string, description: string | undefined): Html {
  return html`<h1>Sign-in did not complete</h1>
<p class="error">error: <code id="oauth-error">${error}</code></p>
${description !== undefined ? html`<p id="oauth-error-description">${description}</p>` : html``}
<form method="post" action="/login"><button type="submit" id="sign-in">Try again</button></form>`;
}
