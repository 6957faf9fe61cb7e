// Redis BucketStore: one atomic Lua script (EVALSHA, encoded in take-script.ts) per batch of
// takes, one string key per bucket (16 bytes: micro-tokens and µs, see token-bucket.lua),
// hash-tagged so each bucket lives in one Redis Cluster slot, time from Redis TIME (every sidecar
// shares one clock), written with its TTL only when a take is admitted, a short command timeout.
// Batching: the takes that arrive in one event-loop turn go to Redis as ONE script call on a single
// node or Sentinel. On a Cluster a script call may only touch the keys of one slot, so the turn's
// takes are grouped per slot and each group is one call, routed by its keys.
// Per take that saves ioredis' command, promise, timer and parse work and Redis' script
// invocation; the script runs a call's takes in arrival order, atomically, so the decisions are
// exactly those of separate calls at the same Redis time. Grouping per slot keeps that: every
// bucket of a take lives in the take's slot, so two takes of one bucket are always in one group,
// in arrival order. docs/how-to/plan-capacity.md has what the grouping gives on a Cluster.
// Refusals answered here (optional, `localRefusals`): a take Redis refused leaves its bucket short
// of the cost for a time the reply fixes, since no replica ever adds tokens, only takes them; until
// then the same take is refused without a call, as Redis would refuse it (ADR 0015).
// The command timeout is the store's own: one timer for all the calls in flight, armed for the
// oldest one's deadline. ioredis' commandTimeout arms a timer per command and deletes a property of
// the command when it clears it, which turns every command object into a slow dictionary.
import { performance } from 'node:perf_hooks';
import { Cluster, Redis, type ClusterNode, type Pipeline, type RedisOptions } from 'ioredis';
import { assertRule, combineDecisions, MICRO, refillWaitUs, toDecision, type BucketRule, type Decision } from './bucket.ts';
import { StoreUnavailableError, type BucketStore, type TakeSink } from './bucket-store.ts';
import { createBucketKeyHasher } from './key-hash.ts';
import { keySlot } from './key-slot.ts';
import { BUCKET_FIELDS, HEAD_FIELDS, parseDecision } from './redis-reply.ts';
import { sendTakeScript, type ScriptReply, type ScriptTarget } from './take-script.ts';

/**
 * Version of the bucket keys' layout, between the prefix and the hash tag. v2: one string per
 * bucket; the unversioned keys of earlier releases were hashes, on which the script's GET would
 * fail with WRONGTYPE. New names leave those keys alone to expire by their TTL (at most twice a
 * bucket's refill time), at the cost of one reset on upgrade: every bucket starts full once, and
 * while old and new sidecars run side by side during a rollout each keeps its own buckets. The
 * hash tag, and so the Cluster slot of every bucket, is unchanged.
 */
const KEY_LAYOUT = 'v2:';
/** Takes per script call by default: ~1-2 µs of script time each, so a batch stays well under 1 ms. */
const DEFAULT_MAX_BATCH = 128;

export interface RedisStoreOptions {
  /** Single node: redis[s]://[user:password@]host:port[/db]. */
  readonly url?: string;
  /** Redis Sentinel: master set name and sentinel addresses. */
  readonly sentinel?: { readonly name: string; readonly sentinels: readonly { host: string; port: number }[]; readonly sentinelPassword?: string };
  /** Redis Cluster seed nodes. */
  readonly cluster?: { readonly nodes: readonly { host: string; port: number }[] };
  /** Password when not in the URL (e.g. from a mounted Secret). */
  readonly password?: string;
  /** Prefix of every bucket key, e.g. `portcullis:bucket:`. */
  readonly keyPrefix?: string;
  /**
   * Set: a bucket's key holds an HMAC-SHA256 of the take's key (route, rule and client key) with
   * this secret, 128 bits in base64url, instead of the key itself, so a copy of Redis holds no user
   * id or API key. Unset: the key as it is.
   */
  readonly keyHashSecret?: string;
  /** Longest wait for one take, ms; then the take rejects with StoreUnavailableError. */
  readonly commandTimeoutMs?: number;
  /** Longest wait to connect, ms. */
  readonly connectTimeoutMs?: number;
  /**
   * Takes per turn sent at once at most (default 128): one script call on a single node or
   * Sentinel, one per slot on a Cluster. 1 turns batching off: one call per take; on a single node
   * or Sentinel the calls of one tick leave in one write (a pipeline), as ioredis' auto-pipelining
   * would send them.
   */
  readonly maxBatch?: number;
  /**
   * Keys whose refusal is remembered at most (default 0: off). While a bucket Redis found short
   * of a take's cost cannot have refilled to it, counted on this process's monotonic clock from
   * the moment the call left, the same take (same limits and costs) is refused here without a
   * call. The oldest key is forgotten first when the limit is reached.
   */
  readonly localRefusals?: number;
  /** Called for every take refused here without a call (a metric). */
  readonly onRefusedLocally?: () => void;
}

/** Shortest wait worth remembering, µs: a refill due sooner is asked of Redis again. */
const MIN_REMEMBERED_WAIT_US = 1000;

/** A take Redis refused: its buckets as Redis decided, and how long one of them stays short. */
interface Refusal {
  readonly rules: readonly BucketRule[];
  readonly costs: readonly number[];
  /** Each bucket's micro-tokens at the decision, in the rules' order. */
  readonly tokens: readonly number[];
  /** performance.now() when the call left; Redis decided later, so no bucket held more since. */
  readonly sentMs: number;
  /** µs after sentMs before which some bucket cannot hold its cost, even refilled all along. */
  readonly waitUs: number;
}

/** A take waiting for its turn's batch, and where its decision goes. */
interface PendingTake {
  /** The take's key (hash-tagged); bucket i > 0 of the take is this key + `:i`, in the same slot. */
  readonly key: string;
  /** The key's Cluster slot; -1 when not on a Cluster (every take goes in one call). */
  readonly slot: number;
  readonly rules: readonly BucketRule[];
  readonly costs: readonly number[];
  readonly sink: TakeSink;
}

/** Keeps a take Redis refused: the take, the reply's fields and where its slice starts, when the call left. */
type KeepRefusal = (take: PendingTake, fields: readonly string[], at: number, sentMs: number) => void;

/**
 * A script call waiting for its reply: it hands each take its slice of the reply, or the call's
 * failure, unless the call was settled already (timed out). One object per call, no closures.
 */
class InFlightCall implements ScriptReply {
  /** The call's takes; emptied once it settles (nothing of it is kept). */
  batch: PendingTake[] | undefined;
  /** performance.now() when the call left. */
  readonly sentMs: number;
  /**
   * performance.now() after which the call's takes fail: the timeout after it left, or after the
   * call before it was answered when that came later (Redis answers a connection's calls in order,
   * so a call queued behind others that are being answered is not a sign of an outage).
   */
  deadline: number;
  /** The call sent after this one (a list in send order, so by deadline: no array to grow and trim). */
  next: InFlightCall | undefined;
  /** Marks this call settled in its store and returns its takes, or undefined when it had settled already. */
  readonly #settle: (call: InFlightCall, answered: boolean) => PendingTake[] | undefined;
  /** Remembers a refused take's reply, when the store answers refusals itself. */
  readonly #refused: KeepRefusal | undefined;
  /** The store's command timeout, ms. */
  readonly #timeoutMs: number;

  constructor(
    batch: PendingTake[],
    sentMs: number,
    deadline: number,
    settle: (call: InFlightCall, answered: boolean) => PendingTake[] | undefined,
    refused: KeepRefusal | undefined,
  ) {
    this.batch = batch;
    this.sentMs = sentMs;
    this.deadline = deadline;
    this.#timeoutMs = deadline - sentMs;
    this.next = undefined;
    this.#settle = settle;
    this.#refused = refused;
  }

  replied(fields: string[]): void {
    const takes = this.#settle(this, true);
    if (takes === undefined) return; // timed out first
    let at = HEAD_FIELDS;
    for (let i = 0; i < takes.length; i++) {
      const t = takes[i] as PendingTake;
      const from = at;
      at += 1 + BUCKET_FIELDS * t.rules.length;
      let decision: Decision;
      try {
        decision = parseDecision(fields, from, t.rules, t.costs);
      } catch (err) {
        t.sink.failed(err as Error);
        continue;
      }
      if (!decision.allowed && this.#refused !== undefined) this.#refused(t, fields, from, this.sentMs);
      t.sink.taken(decision);
    }
  }

  /** Redis answered (NOSCRIPT) and the call went out again: its timeout starts anew. */
  resent(): void {
    if (this.batch !== undefined) this.deadline = Math.max(this.deadline, performance.now() + this.#timeoutMs);
  }

  failed(err: Error): void {
    const takes = this.#settle(this, false);
    if (takes !== undefined) for (const t of takes) t.sink.failed(err);
  }
}

/**
 * ioredis' reconnectOnError for every client of a namespace's Redis user: a Redis that restarted
 * empty may take the connection before the user is set again (the operator replays the users on
 * reconnect); the AUTH then failed and every command is refused with NOAUTH/WRONGPASS. Reconnect,
 * and so authenticate again, instead of staying refused.
 */
export const reconnectOnAuthLoss = (err: Error): boolean => /^(NOAUTH|WRONGPASS)/.test(err.message);

export class RedisBucketStore implements BucketStore {
  readonly client: Redis | Cluster;
  readonly #prefix: string;
  /** The take key -> what goes in its hash tag (an HMAC with keyHashSecret); undefined: the key itself. */
  readonly #hashed: ((key: string) => string) | undefined;
  readonly #maxBatch: number;
  readonly #perSlot: boolean;
  readonly #timeoutMs: number;
  #pending: PendingTake[] = [];
  #flushScheduled = false;
  /** The oldest call not settled yet, and the newest call sent; settled calls after the oldest stay in the list until it passes them. */
  #oldest: InFlightCall | undefined;
  #newest: InFlightCall | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  /** performance.now() when the deadline timer last fired (before that turn's I/O was read). */
  #checkedAt = 0;
  /** Batching off on one node: the pipeline collecting this tick's calls, until it is sent. */
  #tickPipeline: Pipeline | undefined;
  /** Refused takes by Redis key, oldest first; undefined when refusals always go to Redis. */
  readonly #refusals: Map<string, Refusal> | undefined;
  readonly #maxRefusals: number;
  /** What each call is given to keep its refusals: #remember, or nothing when they always go to Redis. */
  readonly #keepRefusal: KeepRefusal | undefined;
  readonly #onRefusedLocally: () => void;
  /** Local refusals of this turn, answered together after it (#answerLater). */
  #dueSinks: TakeSink[] = [];
  #dueDecisions: Decision[] = [];

  constructor(options: RedisStoreOptions) {
    const maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
    this.#timeoutMs = options.commandTimeoutMs ?? 50;
    const common: RedisOptions = {
      connectTimeout: options.connectTimeoutMs ?? 2000,
      // Fail fast while disconnected instead of queueing: the caller's policy decides.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Reconnect quickly and forever: limiting resumes within ~0.5 s of Redis returning.
      retryStrategy: (times) => Math.min(50 * times, 500),
      reconnectOnError: reconnectOnAuthLoss,
      ...(options.password !== undefined ? { password: options.password } : {}),
    };
    let client: Redis | Cluster;
    if (options.cluster !== undefined) {
      const nodes: ClusterNode[] = options.cluster.nodes.map((n) => ({ host: n.host, port: n.port }));
      client = new Cluster(nodes, {
        enableOfflineQueue: false,
        clusterRetryStrategy: (times) => Math.min(50 * times, 500),
        redisOptions: common,
      });
    } else if (options.sentinel !== undefined) {
      client = new Redis({
        ...common,
        name: options.sentinel.name,
        sentinels: options.sentinel.sentinels.map((s) => ({ host: s.host, port: s.port })),
        ...(options.sentinel.sentinelPassword !== undefined ? { sentinelPassword: options.sentinel.sentinelPassword } : {}),
      });
    } else {
      client = new Redis(options.url ?? 'redis://127.0.0.1:6379', common);
    }
    // Errors surface through rejected takes and the caller's metrics; without a listener ioredis
    // would print every reconnect attempt.
    client.on('error', () => {});
    this.client = client;
    this.#prefix = options.keyPrefix ?? 'portcullis:bucket:';
    const secret = options.keyHashSecret;
    this.#hashed = secret === undefined ? undefined : createBucketKeyHasher(secret);
    this.#maxBatch = maxBatch;
    this.#perSlot = options.cluster !== undefined;
    this.#maxRefusals = options.localRefusals ?? 0;
    this.#refusals = this.#maxRefusals > 0 ? new Map() : undefined;
    this.#keepRefusal = this.#refusals === undefined ? undefined : this.#remember;
    this.#onRefusedLocally = options.onRefusedLocally ?? (() => {});
  }

  /**
   * The Redis key of a take's bucket `index`: prefix + `v2:{key}` for the first, + `:index` for the
   * others (one hash tag: every bucket of a take lives in one Cluster slot, as one script call needs).
   */
  keyOf(key: string, index = 0): string {
    // Hashed once per take: the hash is the whole hash tag, so every bucket of a take stays in one slot.
    const tag = this.#hashed === undefined ? key : this.#hashed(key);
    return index === 0 ? `${this.#prefix}${KEY_LAYOUT}{${tag}}` : `${this.#prefix}${KEY_LAYOUT}{${tag}}:${index}`;
  }

  take(key: string, rule: BucketRule, cost: number = rule.requestedTokens): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => this.takeInto(key, rule, cost, { taken: resolve, failed: reject }));
  }

  takeInto(key: string, rule: BucketRule, cost: number, sink: TakeSink): void {
    this.takeAllInto(key, [rule], [cost], sink);
  }

  takeAll(key: string, rules: readonly BucketRule[], costs: readonly number[] = rules.map((r) => r.requestedTokens)): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => this.takeAllInto(key, rules, costs, { taken: resolve, failed: reject }));
  }

  takeAllInto(key: string, rules: readonly BucketRule[], costs: readonly number[], sink: TakeSink): void {
    const invalid = checkTake(rules, costs);
    if (invalid !== undefined) {
      sink.failed(invalid);
      return;
    }
    const redisKey = this.keyOf(key);
    // An empty memory is the common case: no key to hash.
    if (this.#refusals !== undefined && this.#refusals.size > 0) {
      const known = this.#refusals.get(redisKey);
      if (known !== undefined) {
        // Rounded up: a later moment can only find more tokens, so the refusal stays certain.
        const elapsedUs = Math.ceil((performance.now() - known.sentMs) * 1000);
        if (elapsedUs < known.waitUs && sameTake(known, rules, costs)) {
          this.#onRefusedLocally();
          this.#answerLater(sink, refusalAfter(known, elapsedUs));
          return;
        }
        this.#refusals.delete(redisKey);
      }
    }
    this.#enqueue({ key: redisKey, slot: this.#slotOf(redisKey), rules, costs, sink });
  }

  /** The Cluster slot of a take's Redis key (and so of all its buckets); -1 off a Cluster. */
  #slotOf(redisKey: string): number {
    return this.#perSlot ? keySlot(redisKey) : -1;
  }

  /**
   * A local refusal is answered after the turn's I/O, as a Redis reply would be, not inside the
   * caller: answered from within node:http's 'request' event, before the parser has finished the
   * request, a response costs the server more (a flood at saturation: 0.83x the CPU per request
   * and 1.19x the requests per second once answered this way; bench/results/local-refusals-ab.md).
   */
  #answerLater(sink: TakeSink, decision: Decision): void {
    this.#dueSinks.push(sink);
    this.#dueDecisions.push(decision);
    if (this.#dueSinks.length === 1) setImmediate(this.#answerDue);
  }

  readonly #answerDue = (): void => {
    const sinks = this.#dueSinks;
    const decisions = this.#dueDecisions;
    this.#dueSinks = [];
    this.#dueDecisions = [];
    for (let i = 0; i < sinks.length; i++) (sinks[i] as TakeSink).taken(decisions[i] as Decision);
  };

  #enqueue(take: PendingTake): void {
    this.#pending.push(take);
    if (this.#pending.length >= this.#maxBatch) this.#flush();
    else if (!this.#flushScheduled) {
      // setImmediate runs after the poll phase: every request read in this turn joins the batch.
      this.#flushScheduled = true;
      setImmediate(this.#flush);
    }
  }

  /** Sends the pending takes: one script call, or on a Cluster one per slot (arrival order kept in each). */
  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const pending = this.#pending;
    if (pending.length === 0) return;
    this.#pending = [];
    if (!this.#perSlot || pending.length === 1) {
      this.#send(pending);
      return;
    }
    const bySlot = new Map<number, PendingTake[]>();
    for (const t of pending) {
      const group = bySlot.get(t.slot);
      if (group === undefined) bySlot.set(t.slot, [t]);
      else group.push(t);
    }
    for (const group of bySlot.values()) this.#send(group);
  };

  /** Sends takes whose keys share one slot as one script call and settles each with its slice of the reply. */
  #send(batch: PendingTake[]): void {
    const now = performance.now();
    const call = new InFlightCall(batch, now, now + this.#timeoutMs, this.#settle, this.#keepRefusal);
    if (this.#newest === undefined) this.#oldest = call;
    else this.#newest.next = call;
    this.#newest = call;
    if (this.#deadlineTimer === undefined) this.#armDeadline(this.#timeoutMs);
    sendTakeScript(this.client, this.#target(), batch, undefined, call);
  }

  /**
   * Where a call goes: the client, or with batching off on one node this tick's pipeline (sent on
   * the next tick, so the tick's calls share one write). A Cluster sends each call alone, routed by
   * its own keys: a pipeline there must keep to one slot.
   */
  #target(): ScriptTarget {
    if (this.#maxBatch !== 1 || this.#perSlot) return this.client;
    const open = this.#tickPipeline;
    if (open !== undefined) return open;
    const pipeline = this.client.pipeline() as Pipeline;
    this.#tickPipeline = pipeline;
    process.nextTick(() => {
      this.#tickPipeline = undefined;
      // Each call's own promise carries its reply or error to its takes.
      pipeline.exec().catch(() => {});
    });
    return pipeline;
  }

  /**
   * Marks a call settled and returns its takes, or undefined when it had settled already. An
   * answer restarts the timeout of the next call waiting: Redis is answering.
   */
  readonly #settle = (call: InFlightCall, answered: boolean): PendingTake[] | undefined => {
    const takes = call.batch;
    if (takes === undefined) return undefined;
    call.batch = undefined;
    if (answered) {
      let next = call.next;
      while (next !== undefined && next.batch === undefined) next = next.next;
      if (next !== undefined) next.deadline = Math.max(next.deadline, performance.now() + this.#timeoutMs);
    }
    let oldest = this.#oldest;
    while (oldest !== undefined && oldest.batch === undefined) oldest = oldest.next;
    this.#oldest = oldest;
    if (oldest === undefined) this.#newest = undefined;
    return takes;
  };

  /**
   * Keeps a refusal Redis decided: its buckets' micro-tokens at the decision and how long after the
   * call left one of them stays short of its cost refilled at its full rate all along (no replica
   * adds tokens, so none can hold more). Too short a wait is not kept.
   */
  readonly #remember: KeepRefusal = (take, fields, at, sentMs) => {
    const refusals = this.#refusals as Map<string, Refusal>;
    const tokens: number[] = [];
    let waitUs = 0;
    for (let i = 0; i < take.rules.length; i++) {
      // parseDecision checked every field of this slice already.
      const microTokens = Number(fields[at + 1 + BUCKET_FIELDS * i]);
      tokens.push(microTokens);
      waitUs = Math.max(waitUs, refillWaitUs(microTokens, take.rules[i] as BucketRule, take.costs[i] as number));
    }
    if (waitUs < MIN_REMEMBERED_WAIT_US) return;
    refusals.delete(take.key);
    if (refusals.size >= this.#maxRefusals) refusals.delete(refusals.keys().next().value as string);
    refusals.set(take.key, { rules: take.rules, costs: take.costs, tokens, sentMs, waitUs });
  };

  #armDeadline(ms: number): void {
    this.#deadlineTimer = setTimeout(this.#expire, Math.max(1, ms));
    this.#deadlineTimer.unref();
  }

  /**
   * The deadline timer. The timeout is the connection's: it runs out when Redis has not answered
   * the oldest call waiting for that long (a call's deadline restarts when the call before it is
   * answered, #settle), not when the event loop is late. A timer fires late when the loop was
   * busy, and a reply Redis sent in time may then sit unread in the socket; so the check waits for
   * this turn's I/O (setImmediate runs after the poll phase) and judges by the time the timer
   * fired: any reply that had arrived by then was read in that poll and is the decision it is.
   */
  readonly #expire = (): void => {
    this.#checkedAt = performance.now();
    setImmediate(this.#expireAfterIo);
  };

  /**
   * When the oldest call waiting was not answered by its deadline, Redis is not answering: it and
   * every later call past its own deadline fail. Then waits for the oldest one left.
   */
  readonly #expireAfterIo = (): void => {
    this.#deadlineTimer = undefined;
    const before = this.#checkedAt;
    // #settle keeps #oldest on the oldest unsettled call.
    for (let call = this.#oldest; call !== undefined && call.deadline <= before; call = this.#oldest) {
      call.failed(new StoreUnavailableError(`redis bucket store: no answer within ${this.#timeoutMs} ms`));
    }
    const oldest = this.#oldest;
    if (oldest !== undefined) this.#armDeadline(oldest.deadline - performance.now());
  };

  /**
   * Lengthens the TTL of every bucket key of `keyPrefix` (the part inside the hash tag) to at least
   * ttlsMs[i] from now: SCAN over every node that holds keys (each master on a Cluster), then
   * PEXPIRE ... GT per key, which only ever lengthens a TTL (Redis 7). A key the scan misses
   * because it was written during it was written with the new limits' TTL already. Hashed keys
   * (keyHashSecret) do not show their route: every bucket key of the store is lengthened then,
   * which keeps the other routes' buckets exact too (a longer TTL only keeps a state longer).
   */
  async retain(keyPrefix: string, ttlsMs: readonly number[]): Promise<number> {
    const head = `${this.#prefix}${KEY_LAYOUT}{${this.#hashed === undefined ? keyPrefix : ''}`;
    const match = `${head.replace(/[*?[\]\\]/g, '\\$&')}*`;
    const nodes: Redis[] = this.client instanceof Cluster ? this.client.nodes('master') : [this.client];
    let seen = 0;
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
        cursor = next;
        const pipeline = node.pipeline();
        let queued = 0;
        for (const key of keys) {
          // Bucket i > 0 of a take is `<...>}:<i>` (keyOf).
          const close = key.lastIndexOf('}');
          const ttlMs = ttlsMs[close < 0 || close === key.length - 1 ? 0 : Number(key.slice(close + 2))];
          if (ttlMs === undefined) continue;
          pipeline.pexpire(key, ttlMs, 'GT');
          queued++;
        }
        if (queued > 0) await pipeline.exec();
        seen += queued;
      } while (cursor !== '0');
    }
    return seen;
  }

  async ready(): Promise<void> {
    if (this.isReady()) return;
    await new Promise<void>((resolve) => this.client.once('ready', () => resolve()));
  }

  isReady(): boolean {
    return this.client.status === 'ready';
  }

  async close(): Promise<void> {
    // Takes of this turn still waiting for their batch go out first: QUIT queued ahead of them
    // would fail them all (the store is retired on a Redis switch while requests are arriving).
    if (this.#pending.length > 0) this.#flush();
    // QUIT waits for the calls ahead of it: a stalled Redis gets the command timeout, then the cut
    // (whose own close would wait for the stalled peer too, so it is not awaited).
    let timer: NodeJS.Timeout | undefined;
    const quit = this.client.quit().then(() => true, () => false);
    const answered = await Promise.race([quit, new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.#timeoutMs)))]);
    clearTimeout(timer);
    if (!answered) this.client.disconnect();
  }
}

/**
 * A remembered refusal `elapsedUs` after its call left: every bucket refilled at its full rate
 * since Redis decided, the most it can hold now; the decision bucket.ts gives for those tokens.
 */
export function refusalAfter(known: Pick<Refusal, 'rules' | 'costs' | 'tokens'>, elapsedUs: number): Decision {
  const decisions: Decision[] = [];
  for (let i = 0; i < known.rules.length; i++) {
    const rule = known.rules[i] as BucketRule;
    const tokens = Math.min(rule.burstCapacity * MICRO, (known.tokens[i] as number) + elapsedUs * rule.replenishRate);
    decisions.push(toDecision(false, tokens, rule, known.costs[i] as number));
  }
  return combineDecisions(decisions);
}

/** True when a take asks what a remembered one asked: the same limits and costs (the same arrays, on the sidecar's path). */
function sameTake(known: Pick<Refusal, 'rules' | 'costs'>, rules: readonly BucketRule[], costs: readonly number[]): boolean {
  if (known.rules === rules && known.costs === costs) return true;
  if (known.rules.length !== rules.length) return false;
  for (let i = 0; i < rules.length; i++) {
    const a = known.rules[i] as BucketRule;
    const b = rules[i] as BucketRule;
    if (a.replenishRate !== b.replenishRate || a.burstCapacity !== b.burstCapacity || known.costs[i] !== costs[i]) return false;
  }
  return true;
}

/** Why a take cannot be asked (a RangeError), or undefined. */
function checkTake(rules: readonly BucketRule[], costs: readonly number[]): Error | undefined {
  if (rules.length === 0 || rules.length !== costs.length) return new RangeError('a take needs one cost per rule, and at least one rule');
  try {
    for (let i = 0; i < rules.length; i++) assertRule(rules[i] as BucketRule, costs[i] as number);
  } catch (err) {
    return err as Error;
  }
  return undefined;
}
