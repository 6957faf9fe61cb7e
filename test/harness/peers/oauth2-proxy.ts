// Test helper (not a test file): oauth2-proxy (built from its Go module by build-oauth2-proxy.sh)
// in front of a small upstream that echoes the identity headers it receives, both on free
// loopback ports. The flags are those of docs/concepts/auth-server.md ("Behind oauth2-proxy").
import type { RequestListener } from 'node:http';
import { startProgram, type Program } from '../programs.ts';
import { printedPath } from '../printed-path.ts';

/** The binary, building it first when the cache lacks it (the tier's global setup normally has). */
export function oauth2ProxyBinary(): string {
  return printedPath('test/harness/peers/build-oauth2-proxy.sh', 'OAUTH2_PROXY');
}

/** The identity headers an upstream of oauth2-proxy relies on, as the upstream received them. */
export interface EchoedIdentity {
  readonly path: string;
  readonly user?: string;
  readonly email?: string;
  readonly groups?: string;
  readonly preferredUsername?: string;
}

/** An upstream's handler answering every request with the X-Forwarded-* identity headers it got, as JSON in a page. */
export const echoIdentity: RequestListener = (req, res) => {
  const header = (name: string) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v.join(',') : v;
  };
  const body: EchoedIdentity = {
    path: req.url ?? '',
    ...(header('x-forwarded-user') !== undefined ? { user: header('x-forwarded-user') } : {}),
    ...(header('x-forwarded-email') !== undefined ? { email: header('x-forwarded-email') } : {}),
    ...(header('x-forwarded-groups') !== undefined ? { groups: header('x-forwarded-groups') } : {}),
    ...(header('x-forwarded-preferred-username') !== undefined
      ? { preferredUsername: header('x-forwarded-preferred-username') }
      : {}),
  };
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(
    `<!doctype html><title>upstream</title><pre id="echo">${JSON.stringify(body).replace(/[<&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`)}</pre>`,
  );
};

export interface OAuth2ProxyOptions {
  readonly port: number;
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly upstream: string;
  /** 32 characters: the AES key of the session cookie. */
  readonly cookieSecret: string;
  readonly cookieName: string;
  readonly scope: string;
  /** Flags added after the common ones (e.g. --allowed-group, --cookie-refresh). */
  readonly extraArgs?: readonly string[];
}

/** The oauth2-proxy flags of the configuration docs/concepts/auth-server.md shows. */
export function oauth2ProxyArgs(o: OAuth2ProxyOptions): string[] {
  const url = `http://127.0.0.1:${o.port}`;
  return [
    '--provider=oidc',
    `--oidc-issuer-url=${o.issuer}`,
    `--client-id=${o.clientId}`,
    `--client-secret=${o.clientSecret}`,
    `--redirect-url=${url}/oauth2/callback`,
    `--scope=${o.scope}`,
    '--code-challenge-method=S256',
    '--insecure-oidc-skip-nonce=false',
    '--email-domain=*',
    `--upstream=${o.upstream}`,
    `--http-address=127.0.0.1:${o.port}`,
    '--pass-user-headers=true',
    '--skip-provider-button=true',
    `--cookie-name=${o.cookieName}`,
    `--cookie-secret=${o.cookieSecret}`,
    '--cookie-secure=false',
    // The sign-out's `rd` may lead to the auth server's end-session endpoint.
    `--whitelist-domain=${new URL(o.issuer).host}`,
    ...(o.extraArgs ?? []),
  ];
}

export async function startOAuth2Proxy(
  o: OAuth2ProxyOptions,
  name = 'oauth2-proxy',
): Promise<{ program: Program; url: string }> {
  // Its request and auth logs show a prefix of each code and the user's groups, which the log
  // scanner (meant for our own programs) would report; its standard log (errors, refreshes) stays.
  const args = [...oauth2ProxyArgs(o), '--request-logging=false', '--auth-logging=false'];
  const program = await startProgram({
    entry: 'oauth2-proxy/oauth2-proxy',
    executable: oauth2ProxyBinary(),
    args,
    waitPort: o.port,
    name,
  });
  return { program, url: `http://127.0.0.1:${o.port}` };
}
