// The token-bucket script as a plain call: the arguments for a batch of takes and one script call
// on an ioredis client (single node, Sentinel or Cluster). The Redis store sends every batch
// through it; the equivalence tests call it with an explicit time to replay exact sequences.
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { bucketTtlMs, type BucketRule } from './bucket.ts';
import { StoreUnavailableError } from './bucket-store.ts';
import { BUCKET_FIELDS, HEAD_FIELDS, malformed, parseReply, type RawTake } from './redis-reply.ts';

const script = readFileSync(new URL('./token-bucket.lua', import.meta.url), 'utf8');

/** One take as the script sees it: the key of its first bucket, and per bucket a rule and a cost. */
export interface ScriptTake {
  /** Redis key of bucket 0 (hash-tagged); bucket i > 0 is this key + `:i`, in the same slot. */
  readonly key: string;
  readonly rules: readonly BucketRule[];
  readonly costs: readonly number[];
}

interface TakeCommand {
  /** numkeys, the keys, now (µs or ''), the number of limit groups, each group's limits, then per take its group; answers one string. */
  portcullisTake(...args: (string | number)[]): Promise<unknown>;
}

export type TakeScriptClient = (Redis | Cluster) & TakeCommand;

/** Gives `client` the script as a command: EVALSHA, and EVAL when Redis answers NOSCRIPT (after a restart or failover). */
export function defineTakeScript(client: Redis | Cluster): TakeScriptClient {
  // No numberOfKeys: the first argument of each call says how many keys follow.
  client.defineCommand('portcullisTake', { lua: script });
  return client as TakeScriptClient;
}

/**
 * Runs the script once for `takes`, in order and atomically, at Redis TIME or at `nowUs` when given.
 * On a Cluster every key of the call must live in one slot. Answers the reply's fields: the head
 * (HEAD_FIELDS), then per take its slice (1 + BUCKET_FIELDS per bucket); a reply of any other
 * length is a StoreUnavailableError. Takes with the same limits and costs share one group of rule
 * arguments (a route's takes all do), so a take adds its keys and one group number to the call, and
 * only its keys when the call has one group.
 */
export function callTakeScript(client: TakeScriptClient, takes: readonly ScriptTake[], nowUs?: number): Promise<string[]> {
  const args: (string | number)[] = [0];
  const groups: ScriptTake[] = [];
  const groupOfTake: number[] = [];
  let keys = 0;
  let expected = HEAD_FIELDS;
  for (const t of takes) {
    const n = t.rules.length;
    args.push(t.key);
    for (let i = 1; i < n; i++) args.push(`${t.key}:${i}`);
    keys += n;
    expected += 1 + BUCKET_FIELDS * n;
    groupOfTake.push(groupOf(groups, t));
  }
  args[0] = keys;
  args.push(nowUs === undefined ? '' : String(Math.round(nowUs)), groups.length);
  for (const g of groups) {
    args.push(g.rules.length);
    for (let i = 0; i < g.rules.length; i++) {
      const rule = g.rules[i] as BucketRule;
      args.push(rule.replenishRate, rule.burstCapacity, g.costs[i] as number, bucketTtlMs(rule));
    }
  }
  // One group (one rule's takes, the usual batch): the script takes every take as of group 1.
  if (groups.length > 1) for (const g of groupOfTake) args.push(g);
  return client.portcullisTake(...args).then(
    (reply) => {
      const fields = typeof reply === 'string' ? reply.split(' ') : [];
      if (fields.length !== expected) throw malformed();
      return fields;
    },
    (err: unknown) => {
      throw new StoreUnavailableError(`redis bucket store: ${(err as Error).message}`, { cause: err });
    },
  );
}

/** callTakeScript() with every take's slice parsed: decision, micro-tokens per bucket, the call's time. */
export async function runTakes(client: TakeScriptClient, takes: readonly ScriptTake[], nowUs?: number): Promise<RawTake[]> {
  const fields = await callTakeScript(client, takes, nowUs);
  let at = HEAD_FIELDS;
  return takes.map((t) => {
    const take = parseReply(fields, at, t.rules, t.costs);
    at += 1 + BUCKET_FIELDS * t.rules.length;
    return take;
  });
}

/** The group number (1-based) of `take` among `groups`: the first with the same limits and costs, else a new one. */
function groupOf(groups: ScriptTake[], take: ScriptTake): number {
  for (let g = groups.length - 1; g >= 0; g--) if (sameLimits(groups[g] as ScriptTake, take)) return g + 1;
  groups.push(take);
  return groups.length;
}

/** Whether two takes charge the same limits the same costs (the same arrays, or equal values: take() makes new ones). */
function sameLimits(a: ScriptTake, b: ScriptTake): boolean {
  if (a.rules === b.rules && a.costs === b.costs) return true;
  const n = a.rules.length;
  if (b.rules.length !== n) return false;
  for (let i = 0; i < n; i++) {
    const x = a.rules[i] as BucketRule;
    const y = b.rules[i] as BucketRule;
    if (a.costs[i] !== b.costs[i] || x.replenishRate !== y.replenishRate || x.burstCapacity !== y.burstCapacity) return false;
  }
  return true;
}
