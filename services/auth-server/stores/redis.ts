// Redis adapters: state shared by several auth-server replicas. Each record lives in ONE key (so
// the scripts work on Redis Cluster); single-use and rotation are Lua scripts (redis-scripts.ts),
// atomic on the server. Replies are parsed with zod; a reply of the wrong shape is an error, never
// a cast.
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { withScripts } from './redis-scripts.ts';
import { createRedisSessionStore } from './redis-sessions.ts';
import {
  codeRecordSchema,
  consentSchema,
  familySchema,
  interactionSchema,
  type AccessTokenRef,
  type AuthStores,
  type Consent,
  type ConsumeResult,
  type FamilyGrant,
  type RotateResult,
} from './types.ts';

const stringArray = z.array(z.string());
const issuedSchema = z.object({
  familyId: z.string().optional(),
  jti: z.string(),
  accessExpiresAt: z.number(),
});

function parseJson<T>(schema: z.ZodType<T>, text: string): T {
  return schema.parse(JSON.parse(text));
}

function parseJtis(text: string): AccessTokenRef[] {
  if (text === '') return [];
  return text.split(' ').flatMap((item) => {
    const at = item.lastIndexOf(':');
    const expiresAt = Number(item.slice(at + 1));
    return at > 0 && Number.isFinite(expiresAt) ? [{ jti: item.slice(0, at), expiresAt }] : [];
  });
}

/** `prefix`: the namespace's (lib/tenancy authKeyPrefix); every key the stores touch starts with it. */
export function createRedisStores(client: Redis, prefix: string): AuthStores {
  const redis = withScripts(client);
  const k = {
    interaction: (id: string) => `${prefix}ix:${id}`,
    code: (hash: string) => `${prefix}code:${hash}`,
    family: (id: string) => `${prefix}rtf:${id}`,
    userClient: (user: string, clientId: string) => `${prefix}uc:${user}:${clientId}`,
    jti: (jti: string) => `${prefix}jti:${jti}`,
    consent: (user: string) => `${prefix}consent:${user}`,
  };

  /**
   * Adds a family to its user+client index and keeps the index alive at least lifeMs from now:
   * consent revocation finds every family through it, so it must never expire before one of
   * them. (Two keys, two slots on a Cluster: not one script; the TTL only ever grows, NX then GT.)
   */
  async function indexFamily(grant: FamilyGrant, familyId: string, lifeMs: number): Promise<void> {
    const key = k.userClient(grant.user, grant.clientId);
    await redis
      .multi()
      .sadd(key, familyId)
      .pexpire(key, lifeMs, 'NX')
      .pexpire(key, lifeMs, 'GT')
      .exec();
  }

  return {
    kind: 'redis',
    interactions: {
      async put(id, value, ttlMs) {
        await redis.set(k.interaction(id), JSON.stringify(value), 'PX', ttlMs);
      },
      async get(id) {
        const text = await redis.get(k.interaction(id));
        return text === null ? undefined : parseJson(interactionSchema, text);
      },
      async take(id) {
        const text = await redis.getdel(k.interaction(id));
        return text === null ? undefined : parseJson(interactionSchema, text);
      },
      async delete(id) {
        await redis.del(k.interaction(id));
      },
    },
    codes: {
      async put(codeHash, record, ttlMs) {
        await redis
          .multi()
          .hset(k.code(codeHash), 'data', JSON.stringify(record))
          .pexpire(k.code(codeHash), ttlMs)
          .exec();
      },
      async peek(codeHash) {
        const data = await redis.hget(k.code(codeHash), 'data');
        return data === null ? undefined : parseJson(codeRecordSchema, data);
      },
      async consume(codeHash, retainMs): Promise<ConsumeResult> {
        const reply = stringArray.parse(await redis.authConsumeCode(k.code(codeHash), retainMs));
        if (reply[0] === 'ok')
          return { status: 'ok', record: parseJson(codeRecordSchema, reply[1] ?? '') };
        if (reply[0] === 'replayed') {
          return reply[1]
            ? { status: 'replayed', issued: parseJson(issuedSchema, reply[1]) }
            : { status: 'replayed' };
        }
        return { status: 'unknown' };
      },
      async attachIssued(codeHash, issued) {
        const reply = z
          .number()
          .parse(await redis.authAttachIssued(k.code(codeHash), JSON.stringify(issued)));
        return reply === 1;
      },
    },
    refresh: {
      async create(familyId, tokenHash, grant, nowMs, ttlMs, endsAtMs) {
        const lifeMs = Math.min(ttlMs, endsAtMs - nowMs);
        await redis
          .multi()
          .hset(
            k.family(familyId),
            'grant',
            JSON.stringify(grant),
            'current',
            tokenHash,
            'previous',
            '',
            'exp',
            String(nowMs + lifeMs),
            'end',
            String(endsAtMs),
            'jtis',
            '',
          )
          .pexpire(k.family(familyId), lifeMs)
          .exec();
        await indexFamily(grant, familyId, lifeMs);
      },
      async rotate(familyId, tokenHash, newHash, nowMs, ttlMs, grace): Promise<RotateResult> {
        const reply = stringArray.parse(
          await redis.authRotateRefresh(
            k.family(familyId),
            tokenHash,
            newHash,
            nowMs,
            ttlMs,
            grace?.ms ?? 0,
            grace?.sealedSuccessor ?? '',
          ),
        );
        if (reply[0] === 'ok') {
          const grant = parseJson(familySchema, reply[1] ?? '');
          await indexFamily(grant, familyId, z.coerce.number().int().positive().parse(reply[2]));
          return { status: 'ok', grant };
        }
        if (reply[0] === 'grace')
          return {
            status: 'grace',
            grant: parseJson(familySchema, reply[1] ?? ''),
            successor: reply[2] ?? '',
          };
        if (reply[0] === 'reused')
          return {
            status: 'reused',
            grant: parseJson(familySchema, reply[1] ?? ''),
            jtis: parseJtis(reply[2] ?? ''),
          };
        return { status: 'invalid' };
      },
      async addAccessToken(familyId, ref) {
        await redis.authAddJti(k.family(familyId), `${ref.jti}:${ref.expiresAt}`);
      },
      async revoke(familyId) {
        return parseJtis(z.string().parse(await redis.authRevokeFamily(k.family(familyId))));
      },
      async inspect(familyId, tokenHash, nowMs) {
        const [grant, current, previous, revoked, exp] = await redis.hmget(
          k.family(familyId),
          'grant',
          'current',
          'previous',
          'revoked',
          'exp',
        );
        if (grant === null || grant === undefined || current === null) return undefined;
        const isCurrent = current === tokenHash;
        if (!isCurrent && !(previous ?? '').split(' ').includes(tokenHash)) return undefined;
        const expiresAt = Number(exp);
        return {
          grant: parseJson(familySchema, grant),
          current: isCurrent,
          active: isCurrent && revoked !== '1' && expiresAt > nowMs,
          expiresAt,
        };
      },
      async familiesOf(user, clientId) {
        return redis.smembers(k.userClient(user, clientId));
      },
    },
    revoked: {
      async revoke(jti, untilMs, nowMs) {
        if (untilMs > nowMs) await redis.set(k.jti(jti), '1', 'PX', Math.ceil(untilMs - nowMs));
      },
      async isRevoked(jti) {
        return (await redis.exists(k.jti(jti))) === 1;
      },
    },
    consents: {
      async get(user, clientId) {
        const text = await redis.hget(k.consent(user), clientId);
        return text === null ? undefined : parseJson(consentSchema, text);
      },
      async grant(user, clientId, scopes, nowMs) {
        const text = await redis.hget(k.consent(user), clientId);
        const before = text === null ? [] : parseJson(consentSchema, text).scopes;
        const consent: Consent = {
          scopes: [...new Set([...before, ...scopes])].sort(),
          grantedAt: nowMs,
        };
        await redis.hset(k.consent(user), clientId, JSON.stringify(consent));
      },
      async list(user) {
        const all = await redis.hgetall(k.consent(user));
        return new Map(
          Object.entries(all).map(([clientId, text]) => [clientId, parseJson(consentSchema, text)]),
        );
      },
      async revoke(user, clientId) {
        await redis.hdel(k.consent(user), clientId);
      },
    },
    sessions: createRedisSessionStore(redis, prefix),
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
