// Sign-in sessions in memory (the embedded default, one process): by the hash of the cookie value,
// with a per-user index so that revoking a consent ends the user's sessions. `sweep` drops what
// expired, so users who never come back do not hold memory.
import type { SessionStore, SignInSession } from './types.ts';

export interface MemorySessionStore extends SessionStore {
  sweep(nowMs: number): void;
  /** Sessions held, expired or not. */
  readonly size: number;
}

export function createMemorySessionStore(): MemorySessionStore {
  const sessions = new Map<string, { session: SignInSession; expiresAt: number }>();
  const byUser = new Map<string, Set<string>>();
  const forget = (idHash: string) => {
    const entry = sessions.get(idHash);
    if (entry === undefined) return;
    sessions.delete(idHash);
    byUser.get(entry.session.user)?.delete(idHash);
  };
  return {
    async create(idHash, session, nowMs, idleMs) {
      // Expired sessions of this user go when a new one starts: the index never grows without bound.
      for (const id of byUser.get(session.user) ?? [])
        if ((sessions.get(id)?.expiresAt ?? 0) <= nowMs) forget(id);
      sessions.set(idHash, { session, expiresAt: Math.min(nowMs + idleMs, session.endsAt) });
      const mine = byUser.get(session.user) ?? new Set<string>();
      mine.add(idHash);
      byUser.set(session.user, mine);
    },
    async touch(idHash, nowMs, idleMs) {
      const entry = sessions.get(idHash);
      if (entry === undefined) return undefined;
      if (entry.expiresAt <= nowMs) {
        forget(idHash);
        return undefined;
      }
      entry.expiresAt = Math.min(nowMs + idleMs, entry.session.endsAt);
      return entry.session;
    },
    async delete(idHash) {
      forget(idHash);
    },
    async deleteUser(user) {
      for (const id of [...(byUser.get(user) ?? [])]) forget(id);
      byUser.delete(user);
    },
    sweep(nowMs) {
      for (const [id, entry] of sessions) if (entry.expiresAt <= nowMs) forget(id);
      for (const [user, ids] of byUser) if (ids.size === 0) byUser.delete(user);
    },
    get size() {
      return sessions.size;
    },
  };
}
