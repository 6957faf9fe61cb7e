// Runs a Lua script by EVALSHA, loading it with EVAL on NOSCRIPT (after a Redis restart or failover).
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export interface LuaScript {
  readonly source: string;
  readonly sha: string;
}

export function luaScript(source: string): LuaScript {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

export async function runScript(redis: Redis, script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
      return redis.eval(script.source, keys.length, ...keys, ...args);
    }
    throw err;
  }
}
