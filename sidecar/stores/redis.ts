// Redis BucketStore: one atomic Lua script (EVALSHA through ioredis defineCommand) per batch of
// takes, one hash key per bucket, hash-tagged so each bucket lives in one Redis Cluster slot, time
// from Redis TIME (every sidecar shares one clock), PEXPIRE on every write, a short command timeout.
// Batching: the takes that arrive in one event-loop turn go to Redis as ONE script call (on a
// single node or Sentinel; on a Cluster the keys of a batch may live on different nodes, so each
// take is its own call there). Per take that saves ioredis' command, promise, timer and parse work
// and Redis' script invocation; the script runs the takes in arrival order, atomically, so the
// decisions are exactly those of separate calls at the same Redis time.
import { readFileSync } from 'node:fs';
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';
import { assertRule, bucketTtlMs, toDecision, type BucketRule, type Decision } from '../bucket.ts';
import { StoreUnavailableError, type BucketStore, type TakeSink } from './bucket-store.ts';

const script = readFileSync(new URL('./token-bucket.lua', import.meta.url), 'utf8');
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
  /** Longest wait for one take, ms; then the take rejects with StoreUnavailableError. */
  readonly commandTimeoutMs?: number;
  /** Longest wait to connect, ms. */
  readonly connectTimeoutMs?: number;
  /**
   * Takes per script call at most (single node and Sentinel; default 128). 1 turns batching off:
   * one call per take, auto-pipelined by ioredis.
   */
  readonly maxBatch?: number;
  /**
   * Test-only: a clock (ms) whose time is sent to the script instead of Redis TIME, so a test can
   * replay exact sequences. Production leaves it unset.
   */
  readonly clockForTests?: () => number;
}

/** Integers the script's reply holds per take (see token-bucket.lua). */
const REPLY_FIELDS = 5;

interface BucketCommands {
  /** numkeys, the keys, now (µs or ''), then 4 arguments per take; answers one string. */
  portcullisTake(...args: (string | number)[]): Promise<unknown>;
}

/** Where a take's outcome goes: the gateway's sink (a decision), or takeRaw's promise (the whole reply). */
type PendingTake = {
  readonly key: string;
  readonly rule: BucketRule;
  readonly cost: number;
} & ({ readonly raw: false; readonly sink: TakeSink } | { readonly raw: true; readonly sink: RawSink });

interface RawSink {
  taken(take: RawTake): void;
  failed(err: Error): void;
}

/** The raw reply of the script, for tests that compare it with the pure function. */
export interface RawTake {
  readonly decision: Decision;
  readonly microTokens: number;
  readonly nowUs: number;
}

export class RedisBucketStore implements BucketStore {
  readonly client: (Redis | Cluster) & BucketCommands;
  readonly #prefix: string;
  readonly #clock: (() => number) | undefined;
  readonly #maxBatch: number;
  #pending: PendingTake[] = [];
  #flushScheduled = false;

  constructor(options: RedisStoreOptions) {
    // A Cluster keeps one call per take: the keys of a batch may live on different nodes.
    const maxBatch = options.cluster === undefined ? (options.maxBatch ?? DEFAULT_MAX_BATCH) : 1;
    const common: RedisOptions = {
      commandTimeout: options.commandTimeoutMs ?? 50,
      connectTimeout: options.connectTimeoutMs ?? 2000,
      // Fail fast while disconnected instead of queueing: the caller's policy decides.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Batched takes are already one command per turn; without batching, ioredis pipelines.
      enableAutoPipelining: maxBatch === 1,
      // Reconnect quickly and forever: limiting resumes within ~0.5 s of Redis returning.
      retryStrategy: (times) => Math.min(50 * times, 500),
      ...(options.password !== undefined ? { password: options.password } : {}),
    };
    let client: Redis | Cluster;
    if (options.cluster !== undefined) {
      const nodes: ClusterNode[] = options.cluster.nodes.map((n) => ({ host: n.host, port: n.port }));
      client = new Cluster(nodes, {
        enableOfflineQueue: false,
        enableAutoPipelining: true,
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
    // No numberOfKeys: the first argument of each call says how many keys follow.
    client.defineCommand('portcullisTake', { lua: script });
    this.client = client as (Redis | Cluster) & BucketCommands;
    this.#prefix = options.keyPrefix ?? 'portcullis:bucket:';
    this.#clock = options.clockForTests;
    this.#maxBatch = maxBatch;
  }

  /** The Redis key of a bucket: prefix + `{key}` (the hash tag keeps a bucket in one slot). */
  keyOf(key: string): string {
    return `${this.#prefix}{${key}}`;
  }

  take(key: string, rule: BucketRule, cost: number = rule.requestedTokens): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => this.takeInto(key, rule, cost, { taken: resolve, failed: reject }));
  }

  takeInto(key: string, rule: BucketRule, cost: number, sink: TakeSink): void {
    try {
      assertRule(rule, cost);
    } catch (err) {
      sink.failed(err as Error);
      return;
    }
    this.#enqueue({ key: this.keyOf(key), rule, cost, raw: false, sink });
  }

  /** take() with the script's exact state, for equivalence tests. */
  takeRaw(key: string, rule: BucketRule, cost: number = rule.requestedTokens): Promise<RawTake> {
    try {
      assertRule(rule, cost);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return new Promise<RawTake>((resolve, reject) => this.#enqueue({ key: this.keyOf(key), rule, cost, raw: true, sink: { taken: resolve, failed: reject } }));
  }

  #enqueue(take: PendingTake): void {
    this.#pending.push(take);
    if (this.#pending.length >= this.#maxBatch) this.#flush();
    else if (!this.#flushScheduled) {
      // setImmediate runs after the poll phase: every request read in this turn joins the batch.
      this.#flushScheduled = true;
      setImmediate(this.#flush);
    }
  }

  /** Sends the pending takes as one script call and settles each with its slice of the reply. */
  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    const args: (string | number)[] = [batch.length];
    for (const t of batch) args.push(t.key);
    args.push(this.#clock === undefined ? '' : String(Math.round(this.#clock() * 1000)));
    for (const t of batch) args.push(t.rule.replenishRate, t.rule.burstCapacity, t.cost, bucketTtlMs(t.rule));
    this.client.portcullisTake(...args).then(
      (reply) => {
        const fields = typeof reply === 'string' ? reply.split(' ') : [];
        if (fields.length !== batch.length * REPLY_FIELDS) {
          failAll(batch, new StoreUnavailableError('redis bucket store: malformed reply'));
          return;
        }
        for (let i = 0; i < batch.length; i++) {
          const t = batch[i] as PendingTake;
          let take: RawTake;
          try {
            take = parseReply(fields, i * REPLY_FIELDS, t.rule, t.cost);
          } catch (err) {
            t.sink.failed(err as Error);
            continue;
          }
          if (t.raw) t.sink.taken(take);
          else t.sink.taken(take.decision);
        }
      },
      (err: unknown) => failAll(batch, new StoreUnavailableError(`redis bucket store: ${(err as Error).message}`, { cause: err })),
    );
  };

  async ready(): Promise<void> {
    if (this.isReady()) return;
    await new Promise<void>((resolve) => this.client.once('ready', () => resolve()));
  }

  isReady(): boolean {
    return this.client.status === 'ready';
  }

  async close(): Promise<void> {
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}

function failAll(batch: readonly PendingTake[], err: Error): void {
  for (const t of batch) t.sink.failed(err);
}

/** A number of the reply; NaN when absent or empty (Number('') would be 0). */
const integerField = (s: string | undefined): number => (s === undefined || s === '' ? Number.NaN : Number(s));

/** Checks one take's slice of the script's reply (zod would allocate on the hot path; this is the same check by hand). */
export function parseReply(fields: readonly string[], at: number, rule: BucketRule, cost: number): RawTake {
  const allowed = fields[at];
  const microTokens = integerField(fields[at + 1]);
  const retryUs = integerField(fields[at + 2]);
  const resetUs = integerField(fields[at + 3]);
  const nowUs = integerField(fields[at + 4]);
  if (
    (allowed !== '0' && allowed !== '1') ||
    !Number.isSafeInteger(microTokens) ||
    !Number.isSafeInteger(retryUs) ||
    !Number.isSafeInteger(resetUs) ||
    !Number.isSafeInteger(nowUs)
  ) {
    throw new StoreUnavailableError('redis bucket store: malformed reply');
  }
  return { decision: toDecision(allowed === '1', microTokens, retryUs, resetUs, rule, cost), microTokens, nowUs };
}
