// What the admission pipeline (pipeline.ts) reads of a request's head and what it answers: one
// tagged verdict that each front door writes its own way.
import type { AdmissionRequest } from './pipeline.ts';
import { problemTypes, type Problem } from './problem.ts';
import { claimHeaderValue } from './user-key.ts';

export type Verdict =
  | {
      readonly kind: 'admit';
      /** Limiter headers for the client's response (flat name/value list; empty when no take decided). */
      readonly headers: string[];
      /** How the request is counted once it went on. */
      readonly outcome: 'forwarded' | 'store_error_allowed';
      /** The key header value the upstream reads (the identity charged, a claim encoded); undefined: none. */
      readonly identity: string | undefined;
    }
  | {
      readonly kind: 'limited';
      readonly retryAfter: number;
      readonly problem: Problem;
      readonly headers: string[];
    }
  | { readonly kind: 'problem'; readonly problem: Problem; readonly headers: string[] }
  /** The verdict comes later, through settle() (a token to verify, a store to hear from). */
  | { readonly kind: 'pending' };

export const PENDING: Verdict = { kind: 'pending' };

/** What the steps read of a request's head (request-head.ts reads it off a proxied request). */
export interface AdmissionHead {
  /** The key header's first value (header key source). */
  readonly key: string | undefined;
  /** The Authorization header (jwt key source). */
  readonly authorization: string | undefined;
  readonly hostCount: number;
  /** Portcullis gateways the request passed before this one. */
  readonly hops: number;
}

export const problem = (p: Problem, headers: string[] = []): Verdict => ({
  kind: 'problem',
  problem: p,
  headers,
});

/** The key header value the upstream reads: the identity charged, else (header key) the one sent. */
function identityOf(a: AdmissionRequest): string | undefined {
  if (a.rt.jwt === undefined) return a.key ?? a.head.key;
  return a.key === undefined ? undefined : claimHeaderValue(a.key);
}

export const admitted = (
  a: AdmissionRequest,
  headers: string[],
  outcome: 'forwarded' | 'store_error_allowed',
): Verdict => ({ kind: 'admit', headers, outcome, identity: identityOf(a) });

/** A 429 with Retry-After in whole seconds, appended to `headers`; retryAfterMs goes in the body when known. */
export function limited(
  retryAfter: number,
  detail: string,
  headers: string[],
  retryAfterMs?: number,
): Verdict {
  headers.push('retry-after', String(retryAfter));
  const p: Problem = {
    type: problemTypes.rateLimited,
    title: 'Too Many Requests',
    status: 429,
    detail,
    retryAfterMs,
  };
  return { kind: 'limited', retryAfter, problem: p, headers };
}
