// Sign-in sessions in Redis (several replicas): `<prefix>ses:<hash>` holds the session JSON with
// the idle TTL (never past its absolute end), `<prefix>useses:<user>` the user's session hashes,
// kept alive as long as the longest session in it, so that revoking a consent ends them all.
import type { Redis } from 'ioredis';
import { sessionSchema, type SessionStore } from './types.ts';

export function createRedisSessionStore(redis: Redis, prefix: string): SessionStore {
  const key = (idHash: string) => `${prefix}ses:${idHash}`;
  const userKey = (user: string) => `${prefix}useses:${user}`;
  return {
    async create(idHash, session, nowMs, idleMs) {
      const ttl = Math.max(1, Math.min(idleMs, session.endsAt - nowMs));
      const life = Math.max(1, session.endsAt - nowMs);
      await redis
        .multi()
        .set(key(idHash), JSON.stringify(session), 'PX', ttl)
        .sadd(userKey(session.user), idHash)
        .pexpire(userKey(session.user), life, 'NX')
        .pexpire(userKey(session.user), life, 'GT')
        .exec();
    },
    async touch(idHash, nowMs, idleMs) {
      const text = await redis.get(key(idHash));
      if (text === null) return undefined;
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        return undefined;
      }
      const parsed = sessionSchema.safeParse(json);
      if (!parsed.success || parsed.data.endsAt <= nowMs) return undefined;
      // XX: a session deleted meanwhile (sign-out on another replica) is not brought back.
      await redis.pexpire(
        key(idHash),
        Math.max(1, Math.min(idleMs, parsed.data.endsAt - nowMs)),
        'XX',
      );
      return parsed.data;
    },
    async delete(idHash) {
      await redis.del(key(idHash));
    },
    async deleteUser(user) {
      const ids = await redis.smembers(userKey(user));
      await redis.del(userKey(user), ...ids.map(key));
    },
  };
}
