// Minimal cookie reading/writing for the two cookies of the auth server (no dependency needed).

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      // Random ids, or a sealed interaction (JWE compact: base64url parts joined by dots).
      return /^[A-Za-z0-9_.-]{1,4000}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

export interface CookieOptions {
  readonly path: string;
  readonly secure: boolean;
  /** Seconds; 0 deletes the cookie. */
  readonly maxAge?: number;
}

export function serializeCookie(name: string, value: string, options: CookieOptions): string {
  const parts = [`${name}=${value}`, `Path=${options.path}`, 'HttpOnly', 'SameSite=Lax'];
  if (options.secure) parts.push('Secure');
  if (options.maxAge !== undefined) parts.push(`Max-Age=${options.maxAge}`);
  return parts.join('; ');
}
