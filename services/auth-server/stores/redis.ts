// Redis adapters: state shared by several auth-server replicas. Each record lives in ONE key (so
// the scripts work on Redis Cluster); single-use and rotation are Lua scripts, atomic on the
// server. Replies are parsed with zod; a reply of the wrong shape is an error, never a cast.
import type { Redis } from 'ioredis';
import { z } from 'zod';
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

/**
 * KEYS[1] the code's hash key; ARGV[1] how long to remember a used code (ms).
 * Reply: {'unknown'} | {'ok', data} | {'replayed', issued ('' when not attached yet)}.
 */
const consumeCode = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
if redis.call('HGET', KEYS[1], 'used') == '1' then
  redis.call('HSET', KEYS[1], 'replayed', '1')
  return {'replayed', redis.call('HGET', KEYS[1], 'issued') or ''}
end
redis.call('HSET', KEYS[1], 'used', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {'ok', redis.call('HGET', KEYS[1], 'data')}
`;

/** KEYS[1] the code's hash key; ARGV[1] the issued record (JSON). Reply: 1 when the code was replayed meanwhile. */
const attachIssued = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'issued', ARGV[1])
if redis.call('HGET', KEYS[1], 'replayed') == '1' then return 1 end
return 0
`;

/**
 * KEYS[1] the family's hash key; ARGV[1] presented token hash, ARGV[2] new token hash,
 * ARGV[3] now (ms), ARGV[4] new token lifetime (ms), ARGV[5] reuse grace window (ms, 0: none),
 * ARGV[6] the new token sealed (handed out again within the window).
 * Reply: {'ok', grant, lifetime (ms) of the new token} | {'grace', grant, sealed successor} (the
 * token rotated away last, again within the window: nothing changes) | {'reused', grant, jtis}
 * (family revoked) | {'invalid'}. The new token's lifetime stops at the family's end ('end', epoch ms).
 */
const rotateRefresh = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'invalid'} end
local f = redis.call('HMGET', KEYS[1], 'grant', 'current', 'previous', 'revoked', 'exp', 'jtis', 'end', 'graceHash', 'graceUntil', 'successor')
if f[4] == '1' then return {'invalid'} end
local now = tonumber(ARGV[3])
if f[2] == ARGV[1] then
  if tonumber(f[5]) <= now then return {'invalid'} end
  local life = tonumber(ARGV[4])
  if f[7] then
    local left = tonumber(f[7]) - now
    if left <= 0 then return {'invalid'} end
    if left < life then life = left end
  end
  local prev = f[3] or ''
  if prev == '' then prev = ARGV[1] else prev = prev .. ' ' .. ARGV[1] end
  redis.call('HSET', KEYS[1], 'current', ARGV[2], 'previous', prev, 'exp', now + life,
    'graceHash', ARGV[1], 'graceUntil', now + tonumber(ARGV[5]), 'successor', ARGV[6])
  redis.call('PEXPIRE', KEYS[1], life)
  return {'ok', f[1], tostring(life)}
end
if f[8] == ARGV[1] and tonumber(ARGV[5]) > 0 and now <= tonumber(f[9]) and tonumber(f[5]) > now then
  return {'grace', f[1], f[10] or ''}
end
if string.find(' ' .. (f[3] or '') .. ' ', ' ' .. ARGV[1] .. ' ', 1, true) then
  redis.call('HSET', KEYS[1], 'revoked', '1')
  return {'reused', f[1], f[6] or ''}
end
return {'invalid'}
`;

/** KEYS[1] the family's hash key; ARGV[1] `jti:expiresAtMs`. Appends to the family's access tokens. */
const addJti = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local j = redis.call('HGET', KEYS[1], 'jtis')
if j and j ~= '' then j = j .. ' ' .. ARGV[1] else j = ARGV[1] end
redis.call('HSET', KEYS[1], 'jtis', j)
return 1
`;

/** KEYS[1] the family's hash key. Marks it revoked; reply: its access tokens ('' when none or no family). */
const revokeFamily = `
if redis.call('EXISTS', KEYS[1]) == 0 then return '' end
redis.call('HSET', KEYS[1], 'revoked', '1')
return redis.call('HGET', KEYS[1], 'jtis') or ''
`;

const stringArray = z.array(z.string());
const issuedSchema = z.object({ familyId: z.string().optional(), jti: z.string(), accessExpiresAt: z.number() });

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

/** The scripts as ioredis commands, each on one key: EVALSHA, and EVAL when Redis answers NOSCRIPT (after a restart or failover). */
interface AuthScripts {
  authConsumeCode(key: string, retainMs: number): Promise<unknown>;
  authAttachIssued(key: string, issued: string): Promise<unknown>;
  authRotateRefresh(key: string, tokenHash: string, newHash: string, nowMs: number, ttlMs: number, graceMs: number, sealedSuccessor: string): Promise<unknown>;
  authAddJti(key: string, jti: string): Promise<unknown>;
  authRevokeFamily(key: string): Promise<unknown>;
}

function withScripts(redis: Redis): Redis & AuthScripts {
  const scripts: Record<keyof AuthScripts, string> = {
    authConsumeCode: consumeCode,
    authAttachIssued: attachIssued,
    authRotateRefresh: rotateRefresh,
    authAddJti: addJti,
    authRevokeFamily: revokeFamily,
  };
  for (const [name, lua] of Object.entries(scripts)) redis.defineCommand(name, { numberOfKeys: 1, lua });
  return redis as Redis & AuthScripts;
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
    await redis.multi().sadd(key, familyId).pexpire(key, lifeMs, 'NX').pexpire(key, lifeMs, 'GT').exec();
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
        await redis.multi().hset(k.code(codeHash), 'data', JSON.stringify(record)).pexpire(k.code(codeHash), ttlMs).exec();
      },
      async peek(codeHash) {
        const data = await redis.hget(k.code(codeHash), 'data');
        return data === null ? undefined : parseJson(codeRecordSchema, data);
      },
      async consume(codeHash, retainMs): Promise<ConsumeResult> {
        const reply = stringArray.parse(await redis.authConsumeCode(k.code(codeHash), retainMs));
        if (reply[0] === 'ok') return { status: 'ok', record: parseJson(codeRecordSchema, reply[1] ?? '') };
        if (reply[0] === 'replayed') {
          return reply[1] ? { status: 'replayed', issued: parseJson(issuedSchema, reply[1]) } : { status: 'replayed' };
        }
        return { status: 'unknown' };
      },
      async attachIssued(codeHash, issued) {
        const reply = z.number().parse(await redis.authAttachIssued(k.code(codeHash), JSON.stringify(issued)));
        return reply === 1;
      },
    },
    refresh: {
      async create(familyId, tokenHash, grant, nowMs, ttlMs, endsAtMs) {
        const lifeMs = Math.min(ttlMs, endsAtMs - nowMs);
        await redis
          .multi()
          .hset(k.family(familyId), 'grant', JSON.stringify(grant), 'current', tokenHash, 'previous', '', 'exp', String(nowMs + lifeMs), 'end', String(endsAtMs), 'jtis', '')
          .pexpire(k.family(familyId), lifeMs)
          .exec();
        await indexFamily(grant, familyId, lifeMs);
      },
      async rotate(familyId, tokenHash, newHash, nowMs, ttlMs, grace): Promise<RotateResult> {
        const reply = stringArray.parse(
          await redis.authRotateRefresh(k.family(familyId), tokenHash, newHash, nowMs, ttlMs, grace?.ms ?? 0, grace?.sealedSuccessor ?? ''),
        );
        if (reply[0] === 'ok') {
          const grant = parseJson(familySchema, reply[1] ?? '');
          await indexFamily(grant, familyId, z.coerce.number().int().positive().parse(reply[2]));
          return { status: 'ok', grant };
        }
        if (reply[0] === 'grace') return { status: 'grace', grant: parseJson(familySchema, reply[1] ?? ''), successor: reply[2] ?? '' };
        if (reply[0] === 'reused') return { status: 'reused', grant: parseJson(familySchema, reply[1] ?? ''), jtis: parseJtis(reply[2] ?? '') };
        return { status: 'invalid' };
      },
      async addAccessToken(familyId, ref) {
        await redis.authAddJti(k.family(familyId), `${ref.jti}:${ref.expiresAt}`);
      },
      async revoke(familyId) {
        return parseJtis(z.string().parse(await redis.authRevokeFamily(k.family(familyId))));
      },
      async inspect(familyId, tokenHash, nowMs) {
        const [grant, current, previous, revoked, exp] = await redis.hmget(k.family(familyId), 'grant', 'current', 'previous', 'revoked', 'exp');
        if (grant === null || grant === undefined || current === null) return undefined;
        const isCurrent = current === tokenHash;
        if (!isCurrent && !(previous ?? '').split(' ').includes(tokenHash)) return undefined;
        const expiresAt = Number(exp);
        return { grant: parseJson(familySchema, grant), current: isCurrent, active: isCurrent && revoked !== '1' && expiresAt > nowMs, expiresAt };
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
        const consent: Consent = { scopes: [...new Set([...before, ...scopes])].sort(), grantedAt: nowMs };
        await redis.hset(k.consent(user), clientId, JSON.stringify(consent));
      },
      async list(user) {
        const all = await redis.hgetall(k.consent(user));
        return new Map(Object.entries(all).map(([clientId, text]) => [clientId, parseJson(consentSchema, text)]));
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
