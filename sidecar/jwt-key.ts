// The jwt key source: the bucket key is a claim of a verified `Authorization: Bearer` access token
// (RFC 9068 at+jwt), so a client cannot pick a new key per request. jose verifies (issuer,
// audience, typ, pinned asymmetric algorithms) against the issuer's JWKS, which jose caches and
// fetches again on an unknown key id, at most once per cooldown. A verified token is remembered
// by its SHA-256 until its exp, in a bounded map, so a repeat costs a hash and a lookup instead
// of a signature check.
import { hash } from 'node:crypto';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { JwtKeyConfig } from '../lib/config/sidecar.ts';
import { rejectKey } from './user-key.ts';

/** A verified key, or why there is none. */
export type JwtKeyResult =
  | { readonly ok: true; readonly key: string }
  | {
      readonly ok: false;
      readonly reason: 'missing' | 'invalid' | 'unavailable';
      readonly detail: string;
    };

interface CachedKey {
  readonly key: string;
  /** ms (epoch) after which the token is expired. */
  readonly expiresMs: number;
}

const missing: JwtKeyResult = {
  ok: false,
  reason: 'missing',
  detail: 'An Authorization: Bearer access token is required.',
};
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

export class JwtKeySource {
  readonly #config: JwtKeyConfig;
  readonly #keys: JWTVerifyGetKey;
  readonly #now: () => number;
  readonly #cache = new Map<string, CachedKey>();

  constructor(config: JwtKeyConfig, options: { now?: () => number; keys?: JWTVerifyGetKey } = {}) {
    this.#config = config;
    this.#now = options.now ?? Date.now;
    this.#keys =
      options.keys ??
      createRemoteJWKSet(new URL(config.jwksUrl), {
        cooldownDuration: config.jwksCooldownMs,
        timeoutDuration: config.jwksTimeoutMs,
      });
  }

  /** Settings this source was built from (a reload with the same ones keeps the source and its cache). */
  get config(): JwtKeyConfig {
    return this.#config;
  }

  /** Verified tokens remembered right now. */
  get cached(): number {
    return this.#cache.size;
  }

  /**
   * The key for an Authorization header value: synchronously when the token is remembered (or
   * plainly absent or malformed), otherwise a promise of the verification.
   */
  resolve(authorization: string | undefined): JwtKeyResult | Promise<JwtKeyResult> {
    if (authorization === undefined) return missing;
    const m = BEARER.exec(authorization);
    if (m === null) {
      return /^Bearer(\s|$)/i.test(authorization)
        ? { ok: false, reason: 'invalid', detail: 'The bearer token is malformed.' }
        : missing;
    }
    const token = m[1] as string;
    if (this.#config.cacheSize === 0) return this.#verify(token, undefined);
    const id = hash('sha256', token, 'base64url');
    const hit = this.#cache.get(id);
    if (hit !== undefined) {
      if (hit.expiresMs > this.#now()) return { ok: true, key: hit.key };
      this.#cache.delete(id);
    }
    return this.#verify(token, id);
  }

  async #verify(token: string, id: string | undefined): Promise<JwtKeyResult> {
    const c = this.#config;
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.#keys, {
        issuer: c.issuer,
        audience: c.audience,
        algorithms: c.algorithms,
        typ: 'at+jwt',
        requiredClaims: ['exp'],
        currentDate: new Date(this.#now()),
      }));
    } catch (err) {
      return failure(err);
    }
    const key = payload[c.claim];
    // A lone surrogate has no UTF-8 form, so it could not be forwarded (user-key.ts claimHeaderValue).
    if (typeof key !== 'string' || rejectKey(key) !== undefined || !key.isWellFormed()) {
      return {
        ok: false,
        reason: 'invalid',
        detail: `The access token has no usable ${c.claim} claim.`,
      };
    }
    const expiresMs = (payload['exp'] as number) * 1000;
    if (id !== undefined) this.#remember(id, { key, expiresMs });
    return { ok: true, key };
  }

  #remember(id: string, entry: CachedKey): void {
    const cache = this.#cache;
    // Full: forget the oldest (insertion order). Tokens of one issuer share a lifetime, so the
    // oldest is also the first to expire, and a full cache costs O(1) per new token, not a scan.
    if (cache.size >= this.#config.cacheSize) cache.delete(cache.keys().next().value as string);
    cache.set(id, entry);
  }
}

/** A verification error as a result: the key set out of reach is `unavailable` (503), anything else `invalid` (401). */
function failure(err: unknown): JwtKeyResult {
  if (err instanceof joseErrors.JWTExpired)
    return { ok: false, reason: 'invalid', detail: 'The access token expired.' };
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return {
      ok: false,
      reason: 'invalid',
      detail: `The access token is not valid here (${err.claim}).`,
    };
  if (
    err instanceof joseErrors.JWKSTimeout ||
    err instanceof joseErrors.JWKSInvalid ||
    (err instanceof Error && (err.name === 'TypeError' || err.name === 'JOSEError'))
  ) {
    return {
      ok: false,
      reason: 'unavailable',
      detail: "The issuer's signing keys cannot be fetched right now; retry shortly.",
    };
  }
  return { ok: false, reason: 'invalid', detail: 'The access token is invalid.' };
}
