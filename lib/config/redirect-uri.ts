// Redirect URI rules beyond "absolute, no fragment".
// - Plain http only to a loopback host (RFC 8252 8.3, RFC 9700 2.1): elsewhere the code would
//   cross the network in clear text. A client may opt out (allow_insecure_redirect_uris).
// - Exact string match, except that a loopback IP redirect URI matches any port (RFC 8252 7.3):
//   a native app listens on whatever port the OS gives it. Only IP literals get this; `localhost`
//   may resolve elsewhere (RFC 8252 8.3), so it is matched exactly.
// Both read the URI text as written, not as a URL parser normalizes it (`http://127.1/` is not
// loopback here), and SECURE_REDIRECT_URI_PATTERN is also the OAuthClient CRD's CEL rule, so the
// API server, the operator and the auth server agree.
import type { RegisteredClient } from './client-registry.ts';

const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
/** 127.0.0.0/8 and [::1], as written in a URI. */
const LOOPBACK_IP = `127(\\.${OCTET}){3}|\\[::1\\]`;

/**
 * https, or http to localhost, 127.0.0.0/8 or [::1] (then a port, and `/`, `?` or the end: no user
 * info, no `127.0.0.1.example.com`). Written so that JavaScript and RE2 (CEL) read it alike.
 */
export const SECURE_REDIRECT_URI_PATTERN = `^(https://|http://(localhost|${LOOPBACK_IP})(:[0-9]*)?([/?]|$))`;
const secureRedirectUri = new RegExp(SECURE_REDIRECT_URI_PATTERN);

/** A redirect URI the registry accepts without allow_insecure_redirect_uris. */
export function isSecureRedirectUri(uri: string): boolean {
  return secureRedirectUri.test(uri);
}

const loopbackIpUri = new RegExp(
  `^http://(?<host>${LOOPBACK_IP})(:(?<port>[0-9]{1,5}))?(?<rest>[/?].*)?$`,
  's',
);

/** http://<loopback IP>[:port]<rest> as host and rest; undefined for anything else or a port out of 1-65535. */
function loopbackIpParts(uri: string): { host: string; rest: string } | undefined {
  const groups = loopbackIpUri.exec(uri)?.groups;
  if (groups?.['host'] === undefined) return undefined;
  const port = groups['port'];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return undefined;
  return { host: groups['host'], rest: groups['rest'] ?? '' };
}

/** Whether the request's redirect_uri is one the client registered: exactly, or a loopback IP URI with another port. */
export function redirectUriAllowed(
  client: Pick<RegisteredClient, 'redirect_uris'>,
  uri: string,
): boolean {
  if (client.redirect_uris.includes(uri)) return true;
  const asked = loopbackIpParts(uri);
  if (asked === undefined) return false;
  return client.redirect_uris.some((registered) => {
    const parts = loopbackIpParts(registered);
    return parts !== undefined && parts.host === asked.host && parts.rest === asked.rest;
  });
}
