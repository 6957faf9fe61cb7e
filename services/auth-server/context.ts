// What the routes are built from (buildApp's dependencies, minus HTTP concerns).
import type { ClientAuthThrottle } from './client-auth-throttle.ts';
import type { KeyRing } from './key-ring.ts';
import type { AuthMetrics } from './metrics.ts';
import type { PasswordGate } from './password-gate.ts';
import type { Directory } from './registry.ts';
import type { AuthStores } from './stores/types.ts';
import type { SignInThrottle } from './throttle.ts';

export interface AuthSettings {
  /** Issuer identifier, no trailing slash; also the base URL of every endpoint. */
  readonly issuer: string;
  readonly audience: string;
  readonly accessTokenTtlSeconds: number;
  readonly refreshTokenTtlSeconds: number;
  /** Absolute lifetime of a refresh-token family (one code redemption), s. */
  readonly refreshFamilyMaxAgeSeconds: number;
  /** How long the refresh token rotated away last still answers with its successor, s; 0: never. */
  readonly refreshReuseGraceSeconds: number;
  readonly codeTtlSeconds: number;
  readonly interactionTtlSeconds: number;
  /** Sign-in sessions across clients; undefined: off (every authorization shows the sign-in page). */
  readonly sessions?: { readonly idleSeconds: number; readonly maxAgeSeconds: number };
}

export interface AuthContext {
  readonly settings: AuthSettings;
  readonly directory: Directory;
  readonly keys: KeyRing;
  readonly stores: AuthStores;
  readonly throttle: SignInThrottle;
  /** Wrong client secrets per client and address, in this process's memory. */
  readonly clientAuthThrottle: ClientAuthThrottle;
  /** Bounds concurrent password hashing. */
  readonly passwordGate: PasswordGate;
  /** Counters and histograms served on the metrics port. */
  readonly metrics: AuthMetrics;
  /** Epoch ms; the only clock the routes use. */
  readonly now: () => number;
  /** Cookies get `Secure` when the issuer is https. */
  readonly secureCookies: boolean;
}
