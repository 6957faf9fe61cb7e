// Refusals answered without Redis (the store's `localRefusals`, ADR 0015): a take Redis refused
// leaves its bucket short of the cost for a time the reply fixes, since no replica ever adds
// tokens, only takes them; until then the same take is refused here without a call, as Redis
// would refuse it. Counted on this process's monotonic clock from the moment the call left.
import { performance } from 'node:perf_hooks';
import {
  combineDecisions,
  refilledUs,
  refillWaitUs,
  sameLimits,
  toDecision,
  type BucketRule,
  type Decision,
} from './bucket.ts';
import type { TakeSink } from './bucket-store.ts';
import type { KeepRefusal } from './in-flight-call.ts';
import { BUCKET_FIELDS } from './redis-reply.ts';

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

export class RefusalCache {
  /** Refused takes by Redis key, oldest first. */
  readonly #refusals = new Map<string, Refusal>();
  readonly #maxKeys: number;
  readonly #onRefusedLocally: () => void;
  /** Local refusals of this turn, answered together after it (#answerLater). */
  #dueSinks: TakeSink[] = [];
  #dueDecisions: Decision[] = [];

  /** `maxKeys` (>= 1): keys remembered at most, the oldest forgotten first; `onRefusedLocally`: called per take refused here. */
  constructor(maxKeys: number, onRefusedLocally: () => void) {
    this.#maxKeys = maxKeys;
    this.#onRefusedLocally = onRefusedLocally;
  }

  /**
   * True when the take (its Redis key, limits and costs) is certainly refused: its refusal then
   * goes to `sink` after this turn. False: ask Redis.
   */
  answer(
    redisKey: string,
    rules: readonly BucketRule[],
    costs: readonly number[],
    sink: TakeSink,
  ): boolean {
    // An empty memory is the common case: no key to hash.
    if (this.#refusals.size === 0) return false;
    const known = this.#refusals.get(redisKey);
    if (known === undefined) return false;
    // Rounded up: a later moment can only find more tokens, so the refusal stays certain.
    const elapsedUs = Math.ceil((performance.now() - known.sentMs) * 1000);
    if (elapsedUs < known.waitUs && sameLimits(known.rules, known.costs, rules, costs)) {
      this.#onRefusedLocally();
      this.#answerLater(sink, refusalAfter(known, elapsedUs));
      return true;
    }
    this.#refusals.delete(redisKey);
    return false;
  }

  /**
   * Keeps a refusal Redis decided: its buckets' micro-tokens at the decision and how long after the
   * call left one of them stays short of its cost refilled at its full rate all along (no replica
   * adds tokens, so none can hold more). Too short a wait is not kept.
   */
  readonly keep: KeepRefusal = (take, fields, at, sentMs) => {
    const refusals = this.#refusals;
    const tokens: number[] = [];
    let waitUs = 0;
    for (let i = 0; i < take.rules.length; i++) {
      // parseDecision checked every field of this slice already.
      const microTokens = Number(fields[at + 1 + BUCKET_FIELDS * i]);
      tokens.push(microTokens);
      waitUs = Math.max(
        waitUs,
        refillWaitUs(microTokens, take.rules[i] as BucketRule, take.costs[i] as number),
      );
    }
    if (waitUs < MIN_REMEMBERED_WAIT_US) return;
    refusals.delete(take.key);
    if (refusals.size >= this.#maxKeys) refusals.delete(refusals.keys().next().value as string);
    refusals.set(take.key, { rules: take.rules, costs: take.costs, tokens, sentMs, waitUs });
  };

  /**
   * A local refusal is answered after the turn's I/O, as a Redis reply would be, not inside the
   * caller: answered from within node:http's 'request' event, before the parser has finished the
   * request, a response costs the server more (a flood at saturation: 0.83x the CPU per request
   * and 1.19x the requests per second once answered this way, in an A/B of the two).
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
}

/**
 * A remembered refusal `elapsedUs` after its call left: every bucket refilled at its full rate
 * since Redis decided, the most it can hold now; the decision bucket.ts gives for those tokens.
 */
export function refusalAfter(
  known: Pick<Refusal, 'rules' | 'costs' | 'tokens'>,
  elapsedUs: number,
): Decision {
  const decisions: Decision[] = [];
  for (let i = 0; i < known.rules.length; i++) {
    const rule = known.rules[i] as BucketRule;
    decisions.push(
      toDecision(
        false,
        refilledUs(known.tokens[i] as number, rule, elapsedUs),
        rule,
        known.costs[i] as number,
      ),
    );
  }
  return combineDecisions(decisions);
}
