// Scope parsing (RFC 6749 section 3.3) and the user claims each scope releases (OpenID Connect
// Core 5.4, plus `groups`). `openid` asks for an id_token; `offline_access` for a refresh token
// alongside it (Core 11).
import type { ProfileClaims, UserRecord } from '../../lib/config/users-file.ts';

export const OPENID = 'openid';
export const OFFLINE_ACCESS = 'offline_access';
export const GROUPS = 'groups';
/** Scopes with a meaning here, advertised whatever the clients register. */
export const STANDARD_SCOPES = [OPENID, 'profile', 'email', GROUPS, OFFLINE_ACCESS] as const;

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

/** Claims of the users file that each scope releases into tokens, /me and /userinfo. */
const claimsByScope: Record<string, readonly (keyof ProfileClaims)[]> = {
  profile: [
    'name',
    'given_name',
    'family_name',
    'preferred_username',
    'picture',
    'locale',
    'zoneinfo',
  ],
  email: ['email', 'email_verified'],
};

/** Every claim some scope can release (claims_supported lists these beside the token claims). */
export const RELEASABLE_CLAIMS: readonly string[] = [
  ...Object.values(claimsByScope).flat(),
  GROUPS,
];

/** Human-readable descriptions for the consent page. */
export const scopeDescriptions: Record<string, string> = {
  profile: 'Your name and basic profile',
  email: 'Your email address',
  groups: 'The groups you belong to',
  openid: 'Sign you in with your account',
  offline_access: 'Keep access while you are away',
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

/** The claims the granted scopes release about a user: profile claims and, with `groups`, the groups. */
export function userClaims(
  user: UserRecord,
  scopes: readonly string[],
): Partial<ProfileClaims> & { groups?: string[] } {
  const claims = releasedClaims(user.profile, scopes);
  return scopes.includes(GROUPS) ? { ...claims, groups: [...(user.groups ?? [])] } : claims;
}

export function releasedClaims(
  profile: ProfileClaims,
  scopes: readonly string[],
): Partial<ProfileClaims> {
  const out: Record<string, unknown> = {};
  for (const scope of scopes) {
    for (const claim of own(claimsByScope, scope) ?? []) {
      if (profile[claim] !== undefined) out[claim] = profile[claim];
    }
  }
  return out as Partial<ProfileClaims>;
}
