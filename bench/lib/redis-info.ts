// What redis-server says about its own work (INFO cpu, INFO commandstats), for the suites and
// bench/tools/ab.ts that charge Redis' CPU to the decisions that caused it.
import type { Redis } from 'ioredis';

/** The redis-server process's user + sys CPU so far (INFO cpu), µs. */
export async function redisCpuUs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string) =>
    Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** Commands a client sends; the commands a script runs inside are counted by Redis as well, under their own names, and are left out here. */
const TOP_LEVEL = new Set(['evalsha', 'eval', 'incrby', 'expire']);

export async function commandStats(
  admin: Redis,
): Promise<{ usec: number; topLevelCalls: number; calls: Record<string, number> }> {
  let usec = 0;
  let topLevelCalls = 0;
  const calls: Record<string, number> = {};
  for (const m of (await admin.info('commandstats')).matchAll(
    /^cmdstat_([a-z|]+):calls=(\d+),usec=(\d+)/gm,
  )) {
    const name = m[1] ?? '';
    if (
      ['info', 'config', 'ping', 'client', 'hello', 'script', 'select', 'flushall'].includes(
        name.split('|')[0] ?? '',
      )
    )
      continue;
    calls[name] = Number(m[2]);
    if (TOP_LEVEL.has(name)) {
      topLevelCalls += Number(m[2]);
      usec += Number(m[3]);
    }
  }
  return { usec, topLevelCalls, calls };
}
