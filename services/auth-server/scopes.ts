// Scope parsing (RFC 6749 section 3.3) and the profile claims each scope releases.
import type { ProfileClaims } from '../../lib/config/auth-server.ts';

/** Space-delimited scope string -> distinct tokens in request order; undefined on bad syntax. */
export function parseScope(value: string): string[] | undefined {
  if (value === '') return [];
  const tokens = value.split(' ');
  if (tokens.some((t) => !/^[\x21\x23-\x5B\x5D-\x7E]+$/.test(t))) return undefined;
  return [...new Set(tokens)];
}

export function formatScope(scopes: readonly string[]): string {
  return scopes.join(' ');
}

/** Claims of the users file that each scope releases into access tokens (and so to /me). */
const claimsByScope: Record<string, readonly (keyof ProfileClaims)[]> = {
  profile: ['name', 'given_name', 'family_name', 'preferred_username', 'picture', 'locale', 'zoneinfo'],
  email: ['email', 'email_verified'],
};

/** Human-readable descriptions for the consent page. */
export const scopeDescriptions: Record<string, string> = {
  profile: 'Your name and basic profile',
  email: 'Your email address',
};

/**
 * Own keys only: a registered scope may be any scope token, including `constructor` or
 * `toString`, which a plain `record[scope]` would resolve to Object.prototype members.
 */
function own<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

export function scopeDescription(scope: string): string | undefined {
  return own(scopeDescriptions, scope);
}

export function releasedClaims(profile: ProfileClaims, scopes: readonly string[]): Partial<ProfileClaims> {
  const out: Record<string, unknown> = {};
  for (const scope of scopes) {
    for (const claim of own(claimsByScope, scope) ?? []) {
      if (profile[claim] !== undefined) out[claim] = profile[claim];
    }
  }
  return out as Partial<ProfileClaims>;
}
