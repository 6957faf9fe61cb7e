// One script call of the Redis store between leaving and its reply: its takes, when it left, the
// deadline after which its takes fail (call-deadlines.ts), and the hand-out of the reply, a slice
// per take. One object per call, no closures: it is what a batch allocates besides its takes.
import { performance } from 'node:perf_hooks';
import type { BucketRule, Decision } from './bucket.ts';
import type { TakeSink } from './bucket-store.ts';
import { BUCKET_FIELDS, HEAD_FIELDS, parseDecision } from './redis-reply.ts';
import type { ScriptReply } from './take-script.ts';

/** A take waiting for its turn's batch, and where its decision goes. */
export interface PendingTake {
  /** The take's key (hash-tagged); bucket i > 0 of the take is this key + `:i`, in the same slot. */
  readonly key: string;
  /** The key's Cluster slot; -1 when not on a Cluster (every take goes in one call). */
  readonly slot: number;
  readonly rules: readonly BucketRule[];
  readonly costs: readonly number[];
  readonly sink: TakeSink;
}

/** Keeps a take Redis refused: the take, the reply's fields and where its slice starts, when the call left. */
export type KeepRefusal = (
  take: PendingTake,
  fields: readonly string[],
  at: number,
  sentMs: number,
) => void;

/** Marks a call settled in its list and returns its takes, or undefined when it had settled already. */
export type SettleCall = (call: InFlightCall, answered: boolean) => PendingTake[] | undefined;

/**
 * A script call waiting for its reply: it hands each take its slice of the reply, or the call's
 * failure, unless the call was settled already (timed out).
 */
export class InFlightCall implements ScriptReply {
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
  readonly #settle: SettleCall;
  /** Remembers a refused take's reply, when the store answers refusals itself. */
  readonly #refused: KeepRefusal | undefined;
  /** The store's command timeout, ms. */
  readonly #timeoutMs: number;

  constructor(
    batch: PendingTake[],
    sentMs: number,
    deadline: number,
    settle: SettleCall,
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
      if (!decision.allowed && this.#refused !== undefined)
        this.#refused(t, fields, from, this.sentMs);
      t.sink.taken(decision);
    }
  }

  /** Redis answered (NOSCRIPT) and the call went out again: its timeout starts anew. */
  resent(): void {
    if (this.batch !== undefined)
      this.deadline = Math.max(this.deadline, performance.now() + this.#timeoutMs);
  }

  failed(err: Error): void {
    const takes = this.#settle(this, false);
    if (takes !== undefined) for (const t of takes) t.sink.failed(err);
  }
}
