// The Redis store's batching: the takes that arrive in one event-loop turn go to Redis as ONE
// script call on a single node or Sentinel. On a Cluster a script call may only touch the keys of
// one slot, so the turn's takes are grouped per slot and each group is one call, routed by its keys.
// Per take that saves ioredis' command, promise, timer and parse work and Redis' script
// invocation; the script runs a call's takes in arrival order, atomically, so the decisions are
// exactly those of separate calls at the same Redis time. Grouping per slot keeps that: every
// bucket of a take lives in the take's slot, so two takes of one bucket are always in one group,
// in arrival order. docs/how-to/plan-capacity.md has what the grouping gives on a Cluster.
// With batching off (a batch of 1) on one node, the calls of one tick leave in one write (a
// pipeline), as ioredis' auto-pipelining would send them. The batcher sends each call itself
// (take-script.ts), its deadline listed (call-deadlines.ts): a take goes on from here, never back
// to the store that queued it.
import type { Cluster, Pipeline, Redis } from 'ioredis';
import type { CallDeadlines } from './call-deadlines.ts';
import type { PendingTake } from './in-flight-call.ts';
import { keySlot } from './key-slot.ts';
import { sendTakeScript, type ScriptTarget } from './take-script.ts';

export class TakeBatcher {
  readonly #client: Redis | Cluster;
  readonly #maxBatch: number;
  readonly #perSlot: boolean;
  readonly #deadlines: CallDeadlines;
  #pending: PendingTake[] = [];
  #flushScheduled = false;
  /** Batching off on one node: the pipeline collecting this tick's calls, until it is sent. */
  #tickPipeline: Pipeline | undefined;

  /** `maxBatch`: takes per call at most; `perSlot`: the client is a Cluster (one call per slot). */
  constructor(
    client: Redis | Cluster,
    maxBatch: number,
    perSlot: boolean,
    deadlines: CallDeadlines,
  ) {
    this.#client = client;
    this.#maxBatch = maxBatch;
    this.#perSlot = perSlot;
    this.#deadlines = deadlines;
  }

  /** The Cluster slot of a take's Redis key (and so of all its buckets); -1 off a Cluster. */
  slotOf(redisKey: string): number {
    return this.#perSlot ? keySlot(redisKey) : -1;
  }

  /** Queues a take for this turn's batch; a full batch leaves at once. */
  add(take: PendingTake): void {
    this.#pending.push(take);
    if (this.#pending.length >= this.#maxBatch) this.flush();
    else if (!this.#flushScheduled) {
      // setImmediate runs after the poll phase: every request read in this turn joins the batch.
      this.#flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  /** Takes of this turn still waiting for their batch. */
  get waiting(): number {
    return this.#pending.length;
  }

  /** Sends the pending takes: one script call, or on a Cluster one per slot (arrival order kept in each). */
  readonly flush = (): void => {
    this.#flushScheduled = false;
    const pending = this.#pending;
    if (pending.length === 0) return;
    this.#pending = [];
    if (!this.#perSlot || pending.length === 1) {
      this.#send(pending, this.#target());
      return;
    }
    const bySlot = new Map<number, PendingTake[]>();
    for (const t of pending) {
      const group = bySlot.get(t.slot);
      if (group === undefined) bySlot.set(t.slot, [t]);
      else group.push(t);
    }
    for (const group of bySlot.values()) this.#send(group, this.#target());
  };

  /** Sends takes whose keys share one slot as one script call, settling each with its slice of the reply. */
  #send(batch: PendingTake[], target: ScriptTarget): void {
    sendTakeScript(this.#client, target, batch, undefined, this.#deadlines.open(batch));
  }

  /**
   * Where a call goes: the client, or with batching off on one node this tick's pipeline (sent on
   * the next tick, so the tick's calls share one write). A Cluster sends each call alone, routed by
   * its own keys: a pipeline there must keep to one slot.
   */
  #target(): ScriptTarget {
    if (this.#maxBatch !== 1 || this.#perSlot) return this.#client;
    const open = this.#tickPipeline;
    if (open !== undefined) return open;
    const pipeline = this.#client.pipeline() as Pipeline;
    this.#tickPipeline = pipeline;
    process.nextTick(() => {
      this.#tickPipeline = undefined;
      // Each call's own promise carries its reply or error to its takes.
      pipeline.exec().catch(() => {});
    });
    return pipeline;
  }
}
