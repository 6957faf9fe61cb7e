// Ports of the auth server's state: one memory adapter (embedded default, one
// process) and one Redis adapter (several replicas), chosen in create-stores.ts. Every record that
// crosses Redis is parsed back with the zod schemas below; times are epoch milliseconds passed in
// by the caller (the clock is injected, never read inside a store).
import { z } from 'zod';

/** A pending authorization request between GET /auth and the redirect (or a consents-page session). */
export const interactionSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('authorize'),
    clientId: z.string(),
    redirectUri: z.string(),
    scope: z.array(z.string()),
    state: z.string().optional(),
    codeChallenge: z.string().optional(),
    /** OpenID Connect nonce, returned in the id_token. */
    nonce: z.string().optional(),
    /** prompt=consent: the consent page shows even when consent is stored. */
    forceConsent: z.boolean().optional(),
    /** login_hint: the username the sign-in form starts with. */
    loginHint: z.string().optional(),
    /** SHA-256 of the browser-binding cookie value: the forms only work in the browser that started. */
    browserHash: z.string(),
    csrf: z.string(),
    user: z.string().optional(),
    authTime: z.number().optional(),
    failed: z.boolean().optional(),
    expiresAt: z.number(),
  }),
  z.object({
    kind: z.literal('account'),
    browserHash: z.string(),
    csrf: z.string(),
    user: z.string().optional(),
    failed: z.boolean().optional(),
    expiresAt: z.number(),
  }),
]);
export type Interaction = z.infer<typeof interactionSchema>;

export interface InteractionStore {
  put(id: string, value: Interaction, ttlMs: number): Promise<void>;
  get(id: string): Promise<Interaction | undefined>;
  /** Atomic read-and-delete: a completed interaction cannot be completed twice. */
  take(id: string): Promise<Interaction | undefined>;
  delete(id: string): Promise<void>;
}

/** What an authorization code is bound to. */
export const codeRecordSchema = z.object({
  clientId: z.string(),
  redirectUri: z.string(),
  scope: z.array(z.string()),
  user: z.string(),
  authTime: z.number(),
  codeChallenge: z.string().optional(),
  nonce: z.string().optional(),
  expiresAt: z.number(),
});
export type CodeRecord = z.infer<typeof codeRecordSchema>;

/** What a redeemed code produced, so that a replay can revoke it. */
export interface IssuedByCode {
  readonly familyId?: string;
  readonly jti: string;
  readonly accessExpiresAt: number;
}

export type ConsumeResult =
  | { readonly status: 'ok'; readonly record: CodeRecord }
  | { readonly status: 'replayed'; readonly issued?: IssuedByCode }
  | { readonly status: 'unknown' };

export interface CodeStore {
  /** Stores a new code (by hash) for ttlMs. */
  put(codeHash: string, record: CodeRecord, ttlMs: number): Promise<void>;
  /**
   * The code's record, used or not, without consuming it (undefined when unknown or expired): the
   * token endpoint checks client, redirect_uri and PKCE against it before it consumes anything.
   */
  peek(codeHash: string): Promise<CodeRecord | undefined>;
  /** Single use, atomically: the first call gets `ok`; later calls get `replayed` (remembered for retainMs). */
  consume(codeHash: string, retainMs: number): Promise<ConsumeResult>;
  /** Records what a redeemed code issued; true when a replay happened meanwhile (the caller revokes). */
  attachIssued(codeHash: string, issued: IssuedByCode): Promise<boolean>;
}

/** One refresh-token family: the grant one code started, carried along by rotation. */
export const familySchema = z.object({
  clientId: z.string(),
  user: z.string(),
  scope: z.array(z.string()),
  authTime: z.number(),
});
export type FamilyGrant = z.infer<typeof familySchema>;

export type RotateResult =
  | { readonly status: 'ok'; readonly grant: FamilyGrant }
  /**
   * The token rotated away last, presented again within the reuse grace window (another replica of
   * the client refreshing at once): nothing changes; `successor` is the sealed token it became.
   */
  | { readonly status: 'grace'; readonly grant: FamilyGrant; readonly successor: string }
  /** An earlier token of the family was presented: the family is now revoked; `jtis` were its access tokens. */
  | {
      readonly status: 'reused';
      readonly grant: FamilyGrant;
      readonly jtis: readonly AccessTokenRef[];
    }
  | { readonly status: 'invalid' };

/** The refresh-token reuse grace window: how long the token rotated away last still answers, and with what. */
export interface RotationGrace {
  /** ms; 0: none (a reuse always revokes the family). */
  readonly ms: number;
  /** The new token sealed (never stored in clear), handed out again to a request within the window. */
  readonly sealedSuccessor: string;
}

export interface AccessTokenRef {
  readonly jti: string;
  readonly expiresAt: number;
}

export interface FamilyState {
  readonly grant: FamilyGrant;
  readonly active: boolean;
  readonly current: boolean;
  readonly expiresAt: number;
}

export interface RefreshStore {
  /**
   * Starts a family whose first token has hash tokenHash. The family ends at endsAtMs whatever
   * its rotations: no token of it lives past that, and rotating at or after it is `invalid`.
   */
  create(
    familyId: string,
    tokenHash: string,
    grant: FamilyGrant,
    nowMs: number,
    ttlMs: number,
    endsAtMs: number,
  ): Promise<void>;
  /**
   * Rotation: tokenHash must be the family's current token; it is replaced by newHash atomically.
   * The user+client index (familiesOf) lives at least as long as the family after it.
   */
  rotate(
    familyId: string,
    tokenHash: string,
    newHash: string,
    nowMs: number,
    ttlMs: number,
    grace?: RotationGrace,
  ): Promise<RotateResult>;
  /** Remembers an access token issued in the family so that revoking the family revokes it too. */
  addAccessToken(familyId: string, ref: AccessTokenRef): Promise<void>;
  /** Revokes the family; returns its access tokens (for the deny list). */
  revoke(familyId: string): Promise<readonly AccessTokenRef[]>;
  /** For introspection and revocation: the family and whether tokenHash is its live token. */
  inspect(familyId: string, tokenHash: string, nowMs: number): Promise<FamilyState | undefined>;
  /** Family ids of one user's grants to one client (consent revocation revokes them). */
  familiesOf(user: string, clientId: string): Promise<readonly string[]>;
}

export interface RevokedTokenStore {
  revoke(jti: string, untilMs: number, nowMs: number): Promise<void>;
  isRevoked(jti: string): Promise<boolean>;
}

export const consentSchema = z.object({ scopes: z.array(z.string()), grantedAt: z.number() });
export type Consent = z.infer<typeof consentSchema>;

export interface ConsentStore {
  get(user: string, clientId: string): Promise<Consent | undefined>;
  /** Adds scopes to the stored consent (union). */
  grant(user: string, clientId: string, scopes: readonly string[], nowMs: number): Promise<void>;
  list(user: string): Promise<ReadonlyMap<string, Consent>>;
  revoke(user: string, clientId: string): Promise<void>;
}

/** A sign-in session (optional, AUTH_SIGN_IN_SESSIONS): who signed in when, and its absolute end. */
export const sessionSchema = z.object({
  user: z.string(),
  authTime: z.number(),
  endsAt: z.number(),
});
export type SignInSession = z.infer<typeof sessionSchema>;

export interface SessionStore {
  /** Stores a session under the hash of its cookie value, living idleMs (never past endsAt). */
  create(idHash: string, session: SignInSession, nowMs: number, idleMs: number): Promise<void>;
  /** The live session, its idle expiry pushed to min(now + idleMs, endsAt); undefined when gone. */
  touch(idHash: string, nowMs: number, idleMs: number): Promise<SignInSession | undefined>;
  delete(idHash: string): Promise<void>;
  /** Ends every session of one user (consent revoked, user gone). */
  deleteUser(user: string): Promise<void>;
}

export interface AuthStores {
  readonly kind: 'memory' | 'redis';
  readonly interactions: InteractionStore;
  readonly codes: CodeStore;
  readonly refresh: RefreshStore;
  readonly revoked: RevokedTokenStore;
  readonly consents: ConsentStore;
  readonly sessions: SessionStore;
  close(): Promise<void>;
}
