// The auth stores' Lua scripts, each on ONE key (so they work on Redis Cluster) and atomic on the
// server: single use of a code, refresh-token rotation with its reuse detection, a family's access
// tokens and its revocation. redis.ts parses their replies.
import type { Redis } from 'ioredis';

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

/** The scripts as ioredis commands, each on one key: EVALSHA, and EVAL when Redis answers NOSCRIPT (after a restart or failover). */
export interface AuthScripts {
  authConsumeCode(key: string, retainMs: number): Promise<unknown>;
  authAttachIssued(key: string, issued: string): Promise<unknown>;
  authRotateRefresh(
    key: string,
    tokenHash: string,
    newHash: string,
    nowMs: number,
    ttlMs: number,
    graceMs: number,
    sealedSuccessor: string,
  ): Promise<unknown>;
  authAddJti(key: string, jti: string): Promise<unknown>;
  authRevokeFamily(key: string): Promise<unknown>;
}

export function withScripts(redis: Redis): Redis & AuthScripts {
  const scripts: Record<keyof AuthScripts, string> = {
    authConsumeCode: consumeCode,
    authAttachIssued: attachIssued,
    authRotateRefresh: rotateRefresh,
    authAddJti: addJti,
    authRevokeFamily: revokeFamily,
  };
  for (const [name, lua] of Object.entries(scripts))
    redis.defineCommand(name, { numberOfKeys: 1, lua });
  return redis as Redis & AuthScripts;
}
