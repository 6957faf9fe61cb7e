// Instructions inside redis-server per rate-limit decision, for the redis-cost suite: the
// repeatable twin of its CPU figures, which move by 1.7x from round to round on a shared VM while
// these repeat within 0.2 %. redis-server runs under valgrind's callgrind (every instruction of the
// process: reading the request, the script, its inner commands, writing the reply); each figure
// comes from two runs of a fresh server, one with the warm-up only and one with the warm-up and the
// measured takes, and the difference is divided by the measured takes, so start-up and shutdown
// cancel out. The time is passed to the script (one µs later per call), so every run decides
// exactly the same way, and every key outlives the run, so no expiry work depends on how long it took.
// Four cases: refused takes (a drained bucket) and admitted takes (a bucket too large to drain),
// each batched (128 takes per script call, as at saturation) and one script call per take
// (pipelined, 128 in flight). 1,000 users, one limit per take. Needs valgrind (installed on demand
// from Debian); without it the section says so.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import type { BucketRule } from '../lib/token-bucket/bucket.ts';
import { callTakeScript, type ScriptTake } from '../lib/token-bucket/take-script.ts';
import { freePort } from '../test/harness/ports.ts';
import { startProgram } from '../test/harness/programs.ts';
import { callgrindTotal, valgrindVersion } from './lib/callgrind.ts';
import { r2 } from './lib/measure.ts';

const USERS = 1000;
const MEASURED = Number(process.env['BENCH_REDIS_IR_TAKES'] ?? 12_800);
const BATCH = 128;
// A take of a whole burst: the warm-up's drains the bucket, and at one µs per call it never refills
// enough to admit another. Long TTLs keep every key alive under valgrind's slow clock, so no key
// expires during a run (expiry work would depend on how long the run took).
const REFUSING: BucketRule = { replenishRate: 1, burstCapacity: 1000, requestedTokens: 1000 };
const ADMITTING: BucketRule = { replenishRate: 1, burstCapacity: 1_000_000, requestedTokens: 1 };
const START_US = 1_795_000_000_000_000;

type Case = 'refused' | 'admitted';
type Calls = 'batched' | 'single';

export interface RedisInstructionsResult {
  valgrind?: string;
  /** Why nothing was measured. */
  notRun?: string;
  rows: { decisions: Case; calls: Calls; takes: number; instructionsPerTake: number }[];
  /** One script call per take over batched, per take: how many times the batched take's work each costs. */
  ratios: { refused: number; admitted: number } | undefined;
}

function takesFor(rule: BucketRule, from: number, count: number): ScriptTake[] {
  return Array.from({ length: count }, (_, i) => ({
    key: `pc:v2:{${rule === REFUSING ? 'r' : 'a'}${(from + i) % USERS}}`,
    rules: [rule],
    costs: [rule.requestedTokens],
  }));
}

/** Runs `work` against a fresh redis-server under callgrind and answers the process's total instructions. */
async function instructionsOf(work: (client: Redis) => Promise<void>): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-redis-ir-'));
  const out = path.join(dir, 'callgrind.out');
  const port = await freePort();
  const server = await startProgram({
    name: 'bench-redis-callgrind',
    entry: 'redis-server',
    executable: 'redis-server',
    launcher: ['valgrind', '--tool=callgrind', `--callgrind-out-file=${out}`],
    // No persistence, its files in dir, one background tick a second.
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--hz', '1'],
    waitPort: port,
    waitPortMs: 60_000,
  });
  try {
    const client = new Redis({
      port,
      host: '127.0.0.1',
      commandTimeout: 120_000,
      maxRetriesPerRequest: 0,
    });
    await work(client);
    client.disconnect();
    await server.stop('SIGTERM', 120_000); // a clean shutdown, after which callgrind writes its file
    const total = callgrindTotal(readFileSync(out, 'utf8'));
    if (total === undefined) throw new Error(`no callgrind total in ${out}`);
    return total;
  } finally {
    await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function warmUp(client: Redis): Promise<number> {
  // Every user's refusing bucket drained and admitting bucket created, and the script cached.
  let now = START_US;
  for (const rule of [REFUSING, ADMITTING])
    for (let from = 0; from < USERS; from += BATCH)
      await callTakeScript(client, takesFor(rule, from, Math.min(BATCH, USERS - from)), now++);
  return now;
}

async function measured(client: Redis, now: number, calls: Calls, decisions: Case) {
  const rule = decisions === 'refused' ? REFUSING : ADMITTING;
  const expected = decisions === 'admitted' ? '1' : '0';
  const check = (fields: string[]): void => {
    // The head (the call's time), then per take: allowed, micro-tokens.
    for (let i = 1; i < fields.length; i += 2)
      if (fields[i] !== expected)
        throw new Error(`a take meant to be ${decisions} was not: ${fields.join(' ')}`);
  };
  for (let from = 0; from < MEASURED; from += BATCH) {
    const takes = takesFor(rule, from, BATCH);
    if (calls === 'batched') check(await callTakeScript(client, takes, now++));
    else
      for (const fields of await Promise.all(takes.map((t) => callTakeScript(client, [t], now++))))
        check(fields);
  }
}

export async function runRedisInstructions(
  log: (line: string) => void,
): Promise<RedisInstructionsResult> {
  const valgrind = valgrindVersion();
  if (valgrind === undefined)
    return {
      notRun:
        'valgrind is not installed and could not be installed (scripts/ensure-system-deps.sh valgrind:valgrind)',
      rows: [],
      ratios: undefined,
    };
  const base = await instructionsOf(async (c) => void (await warmUp(c)));

  const rows: RedisInstructionsResult['rows'] = [];
  for (const decisions of ['refused', 'admitted'] as const) {
    for (const calls of ['batched', 'single'] as const) {
      const total = await instructionsOf(async (c) =>
        measured(c, await warmUp(c), calls, decisions),
      );
      const perTake = Math.round((total - base) / MEASURED);
      log(`  redis-server instructions, ${decisions} ${calls}: ${perTake} per take`);
      rows.push({ decisions, calls, takes: MEASURED, instructionsPerTake: perTake });
    }
  }
  const per = (d: Case, c: Calls) =>
    rows.find((r) => r.decisions === d && r.calls === c)?.instructionsPerTake ?? NaN;
  return {
    valgrind,
    rows,
    ratios: {
      refused: r2(per('refused', 'single') / per('refused', 'batched')),
      admitted: r2(per('admitted', 'single') / per('admitted', 'batched')),
    },
  };
}

if (import.meta.main) {
  const r = await runRedisInstructions((l) => console.log(l));
  console.log(JSON.stringify(r));
}
