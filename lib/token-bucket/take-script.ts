// The token-bucket script as a plain call: one batch of takes encoded as one EVALSHA and sent on
// an ioredis client (single node, Sentinel or Cluster). The Redis store sends every batch through
// it; the equivalence tests call it with an explicit time to replay exact sequences.
// The call is written to the wire by this module (sent by ioredis-raw-command.ts), not argument by
// argument by ioredis: a route's limits and costs are the same in every call, so their part of the
// command is encoded once, and a call adds only its keys and counts. ioredis still routes the call
// (on a Cluster by its first key; every key of a call shares that key's slot), queues it and
// decodes the reply. A Redis that lost the script (a restart without persistence, a failover,
// SCRIPT FLUSH) answers NOSCRIPT; the call is then sent once more as EVAL with the script's text,
// which also loads it for the next EVALSHA.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { bucketTtlMs, sameLimits, type BucketRule } from './bucket.ts';
import { StoreUnavailableError } from './bucket-store.ts';
import { bulk, sendRaw, type RawTarget } from './ioredis-raw-command.ts';
import { BUCKET_FIELDS, HEAD_FIELDS, malformed, parseReply, type RawTake } from './redis-reply.ts';

const script = readFileSync(new URL('./token-bucket.lua', import.meta.url), 'utf8');
const sha = createHash('sha1').update(script).digest('hex');

/** The command and its first argument, as EVALSHA and as EVAL. */
const evalshaHead = `${bulk('EVALSHA')}${bulk(sha)}`;
const evalHead = `${bulk('EVAL')}${bulk(script)}`;

/** One take as the script sees it: the key of its first bucket, and per bucket a rule and a cost. */
export interface ScriptTake {
  /** Redis key of bucket 0 (hash-tagged); bucket i > 0 is this key + `:i`, in the same slot. */
  readonly key: string;
  readonly rules: readonly BucketRule[];
  readonly costs: readonly number[];
}

/** Where a call is sent: a client, or a pipeline that writes the calls of one turn at once. */
export type ScriptTarget = RawTarget;

/** A group's arguments (its bucket count, then four per bucket), encoded, with how many there are. */
interface EncodedGroup {
  readonly rules: readonly BucketRule[];
  readonly costs: readonly number[];
  readonly wire: string;
  readonly args: number;
}

/**
 * Each group's encoded arguments, made once, by its first rule (rule objects live as long as the
 * config they come from; take() makes new rule and cost lists for every call, so the lists cannot
 * be the key). A group of the same first rule with other limits or costs replaces the entry.
 */
const encodedGroups = new WeakMap<BucketRule, EncodedGroup>();

function encodeGroup(take: ScriptTake): EncodedGroup {
  const first = take.rules[0] as BucketRule;
  const known = encodedGroups.get(first);
  if (known !== undefined && sameLimits(known.rules, known.costs, take.rules, take.costs))
    return known;
  let wire = bulk(String(take.rules.length));
  for (let i = 0; i < take.rules.length; i++) {
    const rule = take.rules[i] as BucketRule;
    wire +=
      bulk(String(rule.replenishRate)) +
      bulk(String(rule.burstCapacity)) +
      bulk(String(take.costs[i] as number)) +
      bulk(String(bucketTtlMs(rule)));
  }
  const group = { rules: take.rules, costs: take.costs, wire, args: 1 + 4 * take.rules.length };
  encodedGroups.set(first, group);
  return group;
}

/** One batch as the script's arguments after the script (numkeys, keys, ARGV), and what its reply must hold. */
interface EncodedCall {
  /** The arguments, RESP-encoded. */
  readonly body: string;
  /** How many arguments `body` holds. */
  readonly args: number;
  /** The first key: the call's Cluster slot. */
  readonly firstKey: string;
  /** Fields the reply must have. */
  readonly expected: number;
}

/** The script's arguments for `takes` (token-bucket.lua: KEYS, now, the groups, then each take's group when there are several). */
function encodeCall(takes: readonly ScriptTake[], nowUs: number | undefined): EncodedCall {
  const first = takes[0] as ScriptTake;
  let keys = '';
  let keyCount = 0;
  let expected = HEAD_FIELDS;
  let oneGroup = true;
  for (const t of takes) {
    const n = t.rules.length;
    keys += bulk(t.key);
    for (let i = 1; i < n; i++) keys += bulk(`${t.key}:${i}`);
    keyCount += n;
    expected += 1 + BUCKET_FIELDS * n;
    if (oneGroup && t !== first && !sameLimits(first.rules, first.costs, t.rules, t.costs))
      oneGroup = false;
  }
  let body = `${bulk(String(keyCount))}${keys}${bulk(nowUs === undefined ? '' : String(Math.round(nowUs)))}`;
  let args = 1 + keyCount + 2;
  if (oneGroup) {
    // One group (one rule's takes, the usual batch): the script takes every take as of group 1.
    const group = encodeGroup(first);
    body += `${bulk('1')}${group.wire}`;
    args += group.args;
  } else {
    const groups: ScriptTake[] = [];
    const groupOfTake = takes.map((t) => groupOf(groups, t));
    body += bulk(String(groups.length));
    for (const g of groups) {
      const group = encodeGroup(g);
      body += group.wire;
      args += group.args;
    }
    for (const g of groupOfTake) body += bulk(String(g));
    args += groupOfTake.length;
  }
  return { body, args, firstKey: first.key, expected };
}

function send(target: ScriptTarget, call: EncodedCall, loaded: boolean): Promise<unknown> {
  const wire = `*${call.args + 2}\r\n${loaded ? evalshaHead : evalHead}${call.body}`;
  // Its route holds only what ioredis routes by: the first key.
  return sendRaw(
    target,
    loaded ? 'evalsha' : 'eval',
    [loaded ? sha : script, 1, call.firstKey],
    wire,
  );
}

/** Receives the outcome of one script call: the reply's fields, or why there are none. Exactly one is called, once. */
export interface ScriptReply {
  replied(fields: string[]): void;
  failed(err: StoreUnavailableError): void;
  /** Redis answered NOSCRIPT and the call goes out again with the script's text (optional). */
  resent?(): void;
}

function deliver(to: ScriptReply, reply: unknown, expected: number): void {
  const fields = typeof reply === 'string' ? reply.split(' ') : [];
  if (fields.length === expected) to.replied(fields);
  else to.failed(malformed());
}

const unavailable = (err: unknown): StoreUnavailableError =>
  new StoreUnavailableError(`redis bucket store: ${(err as Error).message}`, { cause: err });

/**
 * Runs the script once for `takes`, in order and atomically, at Redis TIME or at `nowUs` when given,
 * and hands `to` the reply's fields: the head (HEAD_FIELDS), then per take its slice (1 +
 * BUCKET_FIELDS per bucket); a reply of any other length is a StoreUnavailableError. On a Cluster
 * every key of the call must live in one slot. Takes with the same limits and costs share one
 * group of rule arguments (a route's takes all do), so a take adds its keys and one group number
 * to the call, and only its keys when the call has one group. The call goes to `target` (the
 * client, or a pipeline of it); a retry after NOSCRIPT goes to `client`.
 */
export function sendTakeScript(
  client: Redis | Cluster,
  target: ScriptTarget,
  takes: readonly ScriptTake[],
  nowUs: number | undefined,
  to: ScriptReply,
): void {
  const call = encodeCall(takes, nowUs);
  send(target, call, true).then(
    (reply) => deliver(to, reply, call.expected),
    (err: unknown) => {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) {
        to.failed(unavailable(err));
        return;
      }
      to.resent?.();
      send(client, call, false).then(
        (reply) => deliver(to, reply, call.expected),
        (again: unknown) => to.failed(unavailable(again)),
      );
    },
  );
}

/** sendTakeScript() on `client` as a promise of the reply's fields. */
export function callTakeScript(
  client: Redis | Cluster,
  takes: readonly ScriptTake[],
  nowUs?: number,
): Promise<string[]> {
  return new Promise((resolve, reject) =>
    sendTakeScript(client, client, takes, nowUs, { replied: resolve, failed: reject }),
  );
}

/** callTakeScript() with every take's slice parsed: decision, micro-tokens per bucket, the call's time. */
export async function runTakes(
  client: Redis | Cluster,
  takes: readonly ScriptTake[],
  nowUs?: number,
): Promise<RawTake[]> {
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
  for (let g = groups.length - 1; g >= 0; g--) {
    const group = groups[g] as ScriptTake;
    if (sameLimits(group.rules, group.costs, take.rules, take.costs)) return g + 1;
  }
  groups.push(take);
  return groups.length;
}
