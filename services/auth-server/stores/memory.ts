// In-memory adapters: the embedded default for one process. Same semantics as redis.ts (tested
// side by side in test/integration/auth-stores.test.ts); expiry is checked lazily against the
// injected clock and swept periodically so that idle entries do not accumulate.
import type {
  AccessTokenRef,
  AuthStores,
  CodeRecord,
  CodeStore,
  Consent,
  ConsentStore,
  ConsumeResult,
  FamilyGrant,
  FamilyState,
  Interaction,
  InteractionStore,
  IssuedByCode,
  RefreshStore,
  RevokedTokenStore,
  RotateResult,
} from './types.ts';
import { createMemorySessionStore } from './memory-sessions.ts';

class ExpiringMap<V> {
  readonly #entries = new Map<string, { value: V; expiresAt: number }>();
  readonly #now: () => number;
  constructor(now: () => number) {
    this.#now = now;
  }
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }
  set(key: string, value: V, ttlMs: number): void {
    this.#entries.set(key, { value, expiresAt: this.#now() + ttlMs });
  }
  /** Replaces the value, keeping the expiry. */
  update(key: string, value: V): void {
    const entry = this.#entries.get(key);
    if (entry) entry.value = value;
  }
  expire(key: string, ttlMs: number): void {
    const entry = this.#entries.get(key);
    if (entry) entry.expiresAt = this.#now() + ttlMs;
  }
  delete(key: string): void {
    this.#entries.delete(key);
  }
  sweep(): void {
    const now = this.#now();
    for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key);
  }
}

interface CodeEntry {
  record: CodeRecord;
  used: boolean;
  replayed: boolean;
  issued?: IssuedByCode;
}

interface FamilyEntry {
  grant: FamilyGrant;
  current: string;
  previous: Set<string>;
  revoked: boolean;
  tokenExpiresAt: number;
  /** The family's absolute end (epoch ms). */
  endsAt: number;
  jtis: AccessTokenRef[];
  /** The reuse grace window of the last rotation: the token it replaced, until when, its sealed successor. */
  grace?: { hash: string; untilMs: number; successor: string };
}

export function createMemoryStores(now: () => number): AuthStores {
  const interactions = new ExpiringMap<Interaction>(now);
  const codes = new ExpiringMap<CodeEntry>(now);
  const families = new ExpiringMap<FamilyEntry>(now);
  const byUserClient = new Map<string, Set<string>>();
  const revokedJtis = new ExpiringMap<true>(now);
  const consents = new Map<string, Map<string, Consent>>();
  const sessions = createMemorySessionStore();
  const sweeper = setInterval(() => {
    for (const m of [interactions, codes, families, revokedJtis]) m.sweep();
    sessions.sweep(now());
  }, 60_000);
  sweeper.unref();

  const interactionStore: InteractionStore = {
    async put(id, value, ttlMs) {
      interactions.set(id, value, ttlMs);
    },
    async get(id) {
      return interactions.get(id);
    },
    async take(id) {
      const value = interactions.get(id);
      interactions.delete(id);
      return value;
    },
    async delete(id) {
      interactions.delete(id);
    },
  };

  const codeStore: CodeStore = {
    async put(codeHash, record, ttlMs) {
      codes.set(codeHash, { record, used: false, replayed: false }, ttlMs);
    },
    async peek(codeHash) {
      return codes.get(codeHash)?.record;
    },
    async consume(codeHash, retainMs): Promise<ConsumeResult> {
      const entry = codes.get(codeHash);
      if (!entry) return { status: 'unknown' };
      if (entry.used) {
        entry.replayed = true;
        return entry.issued ? { status: 'replayed', issued: entry.issued } : { status: 'replayed' };
      }
      entry.used = true;
      codes.expire(codeHash, retainMs);
      return { status: 'ok', record: entry.record };
    },
    async attachIssued(codeHash, issued) {
      const entry = codes.get(codeHash);
      if (!entry) return false;
      entry.issued = issued;
      return entry.replayed;
    },
  };

  const userClientKey = (user: string, clientId: string) => `${user}\u0000${clientId}`;

  const refreshStore: RefreshStore = {
    async create(familyId, tokenHash, grant, nowMs, ttlMs, endsAtMs) {
      const lifeMs = Math.min(ttlMs, endsAtMs - nowMs);
      families.set(
        familyId,
        {
          grant,
          current: tokenHash,
          previous: new Set(),
          revoked: false,
          tokenExpiresAt: nowMs + lifeMs,
          endsAt: endsAtMs,
          jtis: [],
        },
        lifeMs,
      );
      const key = userClientKey(grant.user, grant.clientId);
      const set = byUserClient.get(key) ?? new Set<string>();
      set.add(familyId);
      byUserClient.set(key, set);
    },
    async rotate(familyId, tokenHash, newHash, nowMs, ttlMs, grace): Promise<RotateResult> {
      const family = families.get(familyId);
      if (!family || family.revoked) return { status: 'invalid' };
      if (family.current === tokenHash) {
        if (family.tokenExpiresAt <= nowMs || family.endsAt <= nowMs) return { status: 'invalid' };
        const lifeMs = Math.min(ttlMs, family.endsAt - nowMs);
        family.previous.add(tokenHash);
        family.current = newHash;
        if (grace !== undefined && grace.ms > 0)
          family.grace = {
            hash: tokenHash,
            untilMs: nowMs + grace.ms,
            successor: grace.sealedSuccessor,
          };
        else delete family.grace;
        family.tokenExpiresAt = nowMs + lifeMs;
        families.expire(familyId, lifeMs);
        return { status: 'ok', grant: family.grant };
      }
      const g = family.grace;
      if (
        g !== undefined &&
        g.hash === tokenHash &&
        nowMs <= g.untilMs &&
        family.tokenExpiresAt > nowMs
      ) {
        return { status: 'grace', grant: family.grant, successor: g.successor };
      }
      if (family.previous.has(tokenHash)) {
        family.revoked = true;
        return { status: 'reused', grant: family.grant, jtis: [...family.jtis] };
      }
      return { status: 'invalid' };
    },
    async addAccessToken(familyId, ref) {
      const family = families.get(familyId);
      if (family) family.jtis.push(ref);
    },
    async revoke(familyId) {
      const family = families.get(familyId);
      if (!family) return [];
      family.revoked = true;
      return [...family.jtis];
    },
    async inspect(familyId, tokenHash, nowMs): Promise<FamilyState | undefined> {
      const family = families.get(familyId);
      if (!family) return undefined;
      const current = family.current === tokenHash;
      if (!current && !family.previous.has(tokenHash)) return undefined;
      return {
        grant: family.grant,
        current,
        active: current && !family.revoked && family.tokenExpiresAt > nowMs,
        expiresAt: family.tokenExpiresAt,
      };
    },
    async familiesOf(user, clientId) {
      const set = byUserClient.get(userClientKey(user, clientId));
      if (!set) return [];
      for (const id of set) if (!families.get(id)) set.delete(id);
      return [...set];
    },
  };

  const revokedStore: RevokedTokenStore = {
    async revoke(jti, untilMs, nowMs) {
      if (untilMs > nowMs) revokedJtis.set(jti, true, untilMs - nowMs);
    },
    async isRevoked(jti) {
      return revokedJtis.get(jti) === true;
    },
  };

  const consentStore: ConsentStore = {
    async get(user, clientId) {
      return consents.get(user)?.get(clientId);
    },
    async grant(user, clientId, scopes, nowMs) {
      const mine = consents.get(user) ?? new Map<string, Consent>();
      const union = new Set([...(mine.get(clientId)?.scopes ?? []), ...scopes]);
      mine.set(clientId, { scopes: [...union].sort(), grantedAt: nowMs });
      consents.set(user, mine);
    },
    async list(user) {
      return new Map(consents.get(user) ?? []);
    },
    async revoke(user, clientId) {
      consents.get(user)?.delete(clientId);
    },
  };

  return {
    kind: 'memory',
    interactions: interactionStore,
    codes: codeStore,
    refresh: refreshStore,
    revoked: revokedStore,
    consents: consentStore,
    sessions,
    async close() {
      clearInterval(sweeper);
    },
  };
}
