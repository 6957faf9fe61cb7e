// The decision service's one question, asked by every front door that answers without proxying
// (HTTP ext_authz and forward-auth in decision-http.ts, gRPC ext_authz in decision-grpc.ts): may
// this request go on? The same pipeline as the proxy (pipeline.ts: target, rule, key, one take,
// onStoreError, shadow, metrics); what differs is only the shape of the answer a gateway expects.
// The gateway forwards the client's own headers, so an admitted answer names the one identity
// the upstream should read (the key header, set) and the look-alikes it should not (removed).
import type { Socket } from 'node:net';
import type { Admission } from './admission.ts';
import { AwaitedAdmission } from './awaited-admission.ts';
import { problemTypes, type Problem } from './problem.ts';
import type { RouteRuntime } from './route-runtime.ts';

/** The original request a gateway asks about. */
export interface CheckRequest {
  readonly method: string;
  /** Origin-form target: path and query, as the client sent it. */
  readonly target: string;
  /** First value of the key header (header key source). */
  readonly keyValue: string | undefined;
  /** The Authorization header (jwt key source). */
  readonly authorization: string | undefined;
}

export type CheckAnswer =
  | {
      readonly allowed: true;
      /** Headers for the request the gateway forwards, overwriting (flat name/value list): the limiter's and the key header with the identity charged. */
      readonly upstreamHeaders: readonly string[];
      /** Header names the gateway removes from the request it forwards: the key header's look-alikes (request-head.ts keyLookAlikes). */
      readonly removeHeaders: readonly string[];
      /** Headers for the response the client gets (the limiter's). */
      readonly clientHeaders: readonly string[];
    }
  | {
      readonly allowed: false;
      readonly problem: Problem;
      /** The refusal's headers (Retry-After, the limiter's, WWW-Authenticate...), without content-type. */
      readonly headers: readonly string[];
      /** The problem+json body, as the gateway returns it to the client. */
      readonly body: string;
    };

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

const refusal = (problem: Problem, headers: readonly string[]): CheckAnswer => ({
  allowed: false,
  problem,
  headers,
  body: JSON.stringify(problem),
});

/** The answer for one original request; a rejection is unexpected (the callers answer it with checkFailed). */
export async function check(
  admission: Admission,
  rt: RouteRuntime,
  req: CheckRequest,
  socket?: Socket,
): Promise<CheckAnswer> {
  // The same canonical target the proxy matches and forwards; what cannot be made canonical is refused.
  // The gateway checked the Host line itself; the check request carries the authority once.
  const head = { key: req.keyValue, authorization: req.authorization, hostCount: 1, hops: 0 };
  const verdict = await new AwaitedAdmission(admission, rt, socket).admit(
    req.method,
    req.target,
    head,
  );
  if (verdict.kind !== 'admit')
    return verdict.kind === 'pending' ? checkFailed : refusal(verdict.problem, verdict.headers);
  rt.metrics.outcome[verdict.outcome].inc();
  const clientHeaders = verdict.headers;
  // The service behind learns the identity charged under the key header (replacing whatever the client sent).
  const upstreamHeaders =
    verdict.identity === undefined
      ? clientHeaders
      : [...clientHeaders, rt.keyHeader, verdict.identity];
  return { allowed: true, upstreamHeaders, clientHeaders, removeHeaders: rt.keyLookAlikes };
}

/** The refusal when a check failed unexpectedly: the gateway is told to retry, never let through silently. */
export const checkFailed: CheckAnswer = refusal(
  {
    type: problemTypes.storeUnavailable,
    title: 'Service Unavailable',
    status: 503,
    detail: 'The rate limiter could not decide; retry shortly.',
  },
  ['retry-after', '1'],
);
