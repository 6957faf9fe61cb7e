// The script's reply (token-bucket.lua), one take's slice at a time: checked by hand (zod would
// allocate on the hot path) and turned into decisions. A malformed reply is a StoreUnavailableError.
import { combineDecisions, toDecision, type BucketRule, type Decision } from './bucket.ts';
import { StoreUnavailableError } from './bucket-store.ts';

/** Integers the script's reply holds per bucket (its micro-tokens; see token-bucket.lua); each take adds one more (allowed). */
export const BUCKET_FIELDS = 1;

/** Integers at the head of the reply, before the first take: the call's time in µs. */
export const HEAD_FIELDS = 1;

/** The raw reply of the script, for tests that compare it with the pure function. */
export interface RawTake {
  readonly decision: Decision;
  /** Micro-tokens in the (first) bucket after the decision. */
  readonly microTokens: number;
  /** µs time of the script call: Redis TIME (or the test clock). A bucket whose stored time is later decided at that one. */
  readonly nowUs: number;
  /** Every bucket's micro-tokens after the decision, in the rules' order (takeAllUs' states; stored only when admitted). */
  readonly tokens: readonly number[];
}

/** A number of the reply; NaN when absent or empty (Number('') would be 0). */
const integerField = (s: string | undefined): number =>
  s === undefined || s === '' ? Number.NaN : Number(s);

export const malformed = () => new StoreUnavailableError('redis bucket store: malformed reply');

/** The decision in one take's slice of the reply; one limit (the common case) allocates only the decision. */
export function parseDecision(
  fields: readonly string[],
  at: number,
  rules: readonly BucketRule[],
  costs: readonly number[],
): Decision {
  if (rules.length !== 1) return parseReply(fields, at, rules, costs).decision;
  const allowed = fields[at];
  const microTokens = integerField(fields[at + 1]);
  if ((allowed !== '0' && allowed !== '1') || !Number.isSafeInteger(microTokens) || microTokens < 0)
    throw malformed();
  return toDecision(allowed === '1', microTokens, rules[0] as BucketRule, costs[0] as number);
}

/** The call's time at the head of the reply (µs), or a malformed-reply error. */
export function parseReplyTime(fields: readonly string[]): number {
  const nowUs = integerField(fields[0]);
  if (!Number.isSafeInteger(nowUs)) throw malformed();
  return nowUs;
}

/** Checks one take's slice of the script's reply (zod would allocate on the hot path; this is the same check by hand). */
export function parseReply(
  fields: readonly string[],
  at: number,
  rules: readonly BucketRule[],
  costs: readonly number[],
): RawTake {
  const nowUs = parseReplyTime(fields);
  const allowed = fields[at];
  if (allowed !== '0' && allowed !== '1') throw malformed();
  const decisions: Decision[] = [];
  const tokens: number[] = [];
  for (let i = 0; i < rules.length; i++) {
    const microTokens = integerField(fields[at + 1 + BUCKET_FIELDS * i]);
    if (!Number.isSafeInteger(microTokens) || microTokens < 0) throw malformed();
    decisions.push(
      toDecision(allowed === '1', microTokens, rules[i] as BucketRule, costs[i] as number),
    );
    tokens.push(microTokens);
  }
  return { decision: combineDecisions(decisions), microTokens: tokens[0] as number, nowUs, tokens };
}
