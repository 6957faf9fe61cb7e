// RFC 6750 Bearer credentials, shared by the auth server's userinfo endpoint and the user
// service: reading the Authorization header and writing the WWW-Authenticate challenge.

const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

export type BearerHeader =
  { kind: 'none' } | { kind: 'malformed' } | { kind: 'token'; token: string };

/** An Authorization header of another scheme counts as no Bearer credentials at all (RFC 6750 3.1). */
export function bearerFromHeader(header: string | undefined): BearerHeader {
  if (header === undefined || !/^Bearer(\s|$)/i.test(header)) return { kind: 'none' };
  const token = header.slice(6).trim();
  return token !== '' && TOKEN68.test(token) ? { kind: 'token', token } : { kind: 'malformed' };
}

/** RFC 6750 3: a bare challenge when no credentials came, else one naming the error (and the scope it lacks). */
export function bearerChallenge(
  realm: string,
  error?: string,
  description?: string,
  scope?: string,
): string {
  const bare = `Bearer realm="${realm}"`;
  if (error === undefined) return bare;
  return `${bare}, error="${error}", error_description="${description ?? ''}"${scope === undefined ? '' : `, scope="${scope}"`}`;
}
