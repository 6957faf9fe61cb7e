// The script's reply (token-bucket.lua), one take's slice at a time: checked by hand (zod would
// allocate on the hot path) and turned into decisions. A malformed reply is a StoreUnavailableError.
import { combineDecisions, toDecision, type BucketRule, type Decision } from '../bucket.ts';
import { StoreUnavailableError } from './bucket-store.ts';

/** Integers the script's reply holds per bucket (micro-tokens, µs; see token-bucket.lua); each take adds one more. */
export const BUCKET_FIELDS = 2;

/** The raw reply of the script, for tests that compare it with the pure function. */
export interface RawTake {
  readonly decision: Decision;
  /** Micro-tokens in the (first) bucket after the decision. */
  readonly microTokens: number;
  /** µs time of the decision: Redis TIME (or the test clock), or the stored state's when that is later. */
  readonly nowUs: number;
  /** Every bucket as of the decision, in the rules' order (what takeAllUs returns; stored only when admitted). */
  readonly states: readonly { readonly microTokens: number; readonly updatedUs: number }[];
}

/** A number of the reply; NaN when absent or empty (Number('') would be 0). */
const integerField = (s: string | undefined): number => (s === undefined || s === '' ? Number.NaN : Number(s));

export const malformed = () => new StoreUnavailableError('redis bucket store: malformed reply');

/** The decision in one take's slice of the reply; one limit (the common case) allocates only the decision. */
export function parseDecision(fields: readonly string[], at: number, rules: readonly BucketRule[], costs: readonly number[]): Decision {
  if (rules.length !== 1) return parseReply(fields, at, rules, costs).decision;
  const allowed = fields[at];
  const microTokens = integerField(fields[at + 1]);
  if ((allowed !== '0' && allowed !== '1') || !Number.isSafeInteger(microTokens) || microTokens < 0 || !Number.isSafeInteger(integerField(fields[at + 2]))) {
    throw malformed();
  }
  return toDecision(allowed === '1', microTokens, rules[0] as BucketRule, costs[0] as number);
}

/** Checks one take's slice of the script's reply (zod would allocate on the hot path; this is the same check by hand). */
export function parseReply(fields: readonly string[], at: number, rules: readonly BucketRule[], costs: readonly number[]): RawTake {
  const allowed = fields[at];
  if (allowed !== '0' && allowed !== '1') throw malformed();
  const decisions: Decision[] = [];
  const states: { microTokens: number; updatedUs: number }[] = [];
  for (let i = 0; i < rules.length; i++) {
    const f = at + 1 + BUCKET_FIELDS * i;
    const microTokens = integerField(fields[f]);
    const nowUs = integerField(fields[f + 1]);
    if (!Number.isSafeInteger(microTokens) || microTokens < 0 || !Number.isSafeInteger(nowUs)) throw malformed();
    decisions.push(toDecision(allowed === '1', microTokens, rules[i] as BucketRule, costs[i] as number));
    states.push({ microTokens, updatedUs: nowUs });
  }
  const first = states[0] as { microTokens: number; updatedUs: number };
  return { decision: combineDecisions(decisions), microTokens: first.microTokens, nowUs: first.updatedUs, states };
}
