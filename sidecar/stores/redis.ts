// Redis BucketStore: one atomic Lua script per take (EVALSHA through ioredis defineCommand),
// one hash key per bucket, hash-tagged so each bucket lives in one Redis Cluster slot, time from
// Redis TIME (every sidecar shares one clock), PEXPIRE on every write, a short command timeout.
import { readFileSync } from 'node:fs';
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';
import { assertRule, bucketTtlMs, toDecision, type BucketRule, type Decision } from '../bucket.ts';
import { StoreUnavailableError, type BucketStore } from './bucket-store.ts';

const script = readFileSync(new URL('./token-bucket.lua', import.meta.url), 'utf8');

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
  /** Pipeline commands issued in the same tick (fewer syscalls under load). Default true. */
  readonly autoPipelining?: boolean;
  /**
   * Test-only: a clock (ms) whose time is sent to the script instead of Redis TIME, so a test can
   * replay exact sequences. Production leaves it unset.
   */
  readonly clockForTests?: () => number;
}

type TakeReply = [number, string, number, number, string];

interface BucketCommands {
  portcullisTake(key: string, rate: number, capacity: number, cost: number, ttlMs: number, nowUs: string): Promise<TakeReply>;
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

  constructor(options: RedisStoreOptions) {
    const common: RedisOptions = {
      commandTimeout: options.commandTimeoutMs ?? 50,
      connectTimeout: options.connectTimeoutMs ?? 2000,
      // Fail fast while disconnected instead of queueing: the caller's policy decides.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      enableAutoPipelining: options.autoPipelining ?? true,
      // Reconnect quickly and forever: limiting resumes within ~0.5 s of Redis returning.
      retryStrategy: (times) => Math.min(50 * times, 500),
      ...(options.password !== undefined ? { password: options.password } : {}),
    };
    let client: Redis | Cluster;
    if (options.cluster !== undefined) {
      const nodes: ClusterNode[] = options.cluster.nodes.map((n) => ({ host: n.host, port: n.port }));
      client = new Cluster(nodes, {
        enableOfflineQueue: false,
        enableAutoPipelining: common.enableAutoPipelining ?? true,
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
    client.defineCommand('portcullisTake', { numberOfKeys: 1, lua: script });
    this.client = client as (Redis | Cluster) & BucketCommands;
    this.#prefix = options.keyPrefix ?? 'portcullis:bucket:';
    this.#clock = options.clockForTests;
  }

  /** The Redis key of a bucket: prefix + `{key}` (the hash tag keeps a bucket in one slot). */
  keyOf(key: string): string {
    return `${this.#prefix}{${key}}`;
  }

  async take(key: string, rule: BucketRule, cost: number = rule.requestedTokens): Promise<Decision> {
    return (await this.takeRaw(key, rule, cost)).decision;
  }

  /** take() with the script's exact state, for equivalence tests. */
  async takeRaw(key: string, rule: BucketRule, cost: number = rule.requestedTokens): Promise<RawTake> {
    assertRule(rule, cost);
    const nowUs = this.#clock === undefined ? '' : String(Math.round(this.#clock() * 1000));
    let reply: unknown;
    try {
      reply = await this.client.portcullisTake(
        this.keyOf(key),
        rule.replenishRate,
        rule.burstCapacity,
        cost,
        bucketTtlMs(rule),
        nowUs,
      );
    } catch (err) {
      throw new StoreUnavailableError(`redis bucket store: ${(err as Error).message}`, { cause: err });
    }
    return parseReply(reply, rule, cost);
  }

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

/** Checks the script's reply (zod would allocate on the hot path; this is the same check by hand). */
function parseReply(reply: unknown, rule: BucketRule, cost: number): RawTake {
  if (!Array.isArray(reply) || reply.length !== 5) throw new StoreUnavailableError('redis bucket store: malformed reply');
  const [allowed, tokensS, retryUs, resetUs, nowS] = reply as unknown[];
  const microTokens = Number(tokensS);
  const nowUs = Number(nowS);
  if (
    (allowed !== 0 && allowed !== 1) ||
    typeof retryUs !== 'number' ||
    typeof resetUs !== 'number' ||
    !Number.isSafeInteger(microTokens) ||
    !Number.isSafeInteger(nowUs)
  ) {
    throw new StoreUnavailableError('redis bucket store: malformed reply');
  }
  return { decision: toDecision(allowed === 1, microTokens, retryUs, resetUs, rule, cost), microTokens, nowUs };
}
