// Redis BucketStore: one atomic Lua script (EVALSHA, encoded in take-script.ts) per batch of
// takes, one string key per bucket (16 bytes: micro-tokens and µs, see token-bucket.lua),
// hash-tagged so each bucket lives in one Redis Cluster slot, time from Redis TIME (every sidecar
// shares one clock), written with its TTL only when a take is admitted, a short command timeout.
// This file puts the parts together; a take goes through them in this order, never back:
//   refusal-cache.ts   a take Redis refused lately is refused again without a call (optional)
//   take-batcher.ts    the takes of one turn become one script call (one per slot on a Cluster),
//                      listed with its deadline (call-deadlines.ts: one timer for every call)
//   take-script.ts     the call sent, and its reply read
//   in-flight-call.ts  the reply handed out, a slice per take, to each take's sink
// and redis-connection.ts (the client of each topology), bucket-retain.ts (a reload's TTLs).
import type { Cluster, Redis } from 'ioredis';
import { assertRule, type BucketRule } from './bucket.ts';
import type { BucketStore, TakeSink } from './bucket-store.ts';
import { retainBuckets } from './bucket-retain.ts';
import { CallDeadlines } from './call-deadlines.ts';
import { createBucketKeyHasher } from './key-hash.ts';
import {
  clientReady,
  closeClient,
  createRedisClient,
  type RedisConnectionOptions,
} from './redis-connection.ts';
import { RefusalCache } from './refusal-cache.ts';
import { TakeBatcher } from './take-batcher.ts';

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

export interface RedisStoreOptions extends RedisConnectionOptions {
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

export class RedisBucketStore implements BucketStore {
  readonly client: Redis | Cluster;
  readonly #prefix: string;
  /** The take key -> what goes in its hash tag (an HMAC with keyHashSecret); undefined: the key itself. */
  readonly #hashed: ((key: string) => string) | undefined;
  readonly #timeoutMs: number;
  readonly #batcher: TakeBatcher;
  /** Undefined when refusals always go to Redis. */
  readonly #refusals: RefusalCache | undefined;

  constructor(options: RedisStoreOptions) {
    this.client = createRedisClient(options);
    this.#prefix = options.keyPrefix ?? 'portcullis:bucket:';
    this.#hashed =
      options.keyHashSecret === undefined
        ? undefined
        : createBucketKeyHasher(options.keyHashSecret);
    this.#timeoutMs = options.commandTimeoutMs ?? 50;
    const maxRefusals = options.localRefusals ?? 0;
    this.#refusals =
      maxRefusals > 0
        ? new RefusalCache(maxRefusals, options.onRefusedLocally ?? (() => {}))
        : undefined;
    this.#batcher = new TakeBatcher(
      this.client,
      options.maxBatch ?? DEFAULT_MAX_BATCH,
      options.cluster !== undefined,
      new CallDeadlines(this.#timeoutMs, this.#refusals?.keep),
    );
  }

  /**
   * The Redis key of a take's bucket `index`: prefix + `v2:{key}` for the first, + `:index` for the
   * others (one hash tag: every bucket of a take lives in one Cluster slot, as one script call needs).
   */
  keyOf(key: string, index = 0): string {
    // Hashed once per take: the hash is the whole hash tag, so every bucket of a take stays in one slot.
    const tag = this.#hashed === undefined ? key : this.#hashed(key);
    return index === 0
      ? `${this.#prefix}${KEY_LAYOUT}{${tag}}`
      : `${this.#prefix}${KEY_LAYOUT}{${tag}}:${index}`;
  }

  take(key: string, rules: readonly BucketRule[], costs: readonly number[], sink: TakeSink): void {
    const invalid = checkTake(rules, costs);
    if (invalid !== undefined) {
      sink.failed(invalid);
      return;
    }
    const redisKey = this.keyOf(key);
    if (this.#refusals !== undefined && this.#refusals.answer(redisKey, rules, costs, sink)) return;
    this.#batcher.add({ key: redisKey, slot: this.#batcher.slotOf(redisKey), rules, costs, sink });
  }

  /**
   * Lengthens the TTL of every bucket key of `keyPrefix` (the part inside the hash tag) to at least
   * ttlsMs[i] from now (bucket-retain.ts). Hashed keys (keyHashSecret) do not show their route:
   * every bucket key of the store is lengthened then, which keeps the other routes' buckets exact
   * too (a longer TTL only keeps a state longer).
   */
  retain(keyPrefix: string, ttlsMs: readonly number[]): Promise<number> {
    return retainBuckets(
      this.client,
      `${this.#prefix}${KEY_LAYOUT}{${this.#hashed === undefined ? keyPrefix : ''}`,
      ttlsMs,
    );
  }

  ready(): Promise<void> {
    return clientReady(this.client);
  }

  isReady(): boolean {
    return this.client.status === 'ready';
  }

  async close(): Promise<void> {
    // Takes of this turn still waiting for their batch go out first: QUIT queued ahead of them
    // would fail them all (the store is retired on a Redis switch while requests are arriving).
    if (this.#batcher.waiting > 0) this.#batcher.flush();
    await closeClient(this.client, this.#timeoutMs);
  }
}

/** Why a take cannot be asked (a RangeError), or undefined. */
function checkTake(rules: readonly BucketRule[], costs: readonly number[]): Error | undefined {
  if (rules.length === 0 || rules.length !== costs.length)
    return new RangeError('a take needs one cost per rule, and at least one rule');
  try {
    for (let i = 0; i < rules.length; i++) assertRule(rules[i] as BucketRule, costs[i] as number);
  } catch (err) {
    return err as Error;
  }
  return undefined;
}
