// The decision service's one question, asked by every front door that answers without proxying
// (HTTP ext_authz and forward-auth in decision-http.ts, gRPC ext_authz in decision-grpc.ts): may
// this request go on? The same steps as the proxy (Admission.decide: route, rule, key, one take,
// onStoreError, shadow, metrics); what differs is only the shape of the answer a gateway expects.
import { claimHeaderValue } from './user-key.ts';
import { admitTarget, targetPath, type Admission } from './admission.ts';
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
      /** Headers for the request the gateway forwards (flat name/value list): the limiter's, and with jwt the verified key header. */
      readonly upstreamHeaders: readonly string[];
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

const refusal = (problem: Problem, headers: readonly string[]): CheckAnswer => ({ allowed: false, problem, headers, body: JSON.stringify(problem) });

/** The answer for one original request; a rejection is unexpected (the callers answer it with checkFailed). */
export async function check(admission: Admission, rt: RouteRuntime, req: CheckRequest): Promise<CheckAnswer> {
  // The same canonical target the proxy matches and forwards; what cannot be made canonical is refused.
  const target = admitTarget(rt, req.target);
  if (typeof target !== 'string') return refusal(target, []);
  const path = targetPath(target);
  // The gateway checked the Host line itself; the check request carries the authority once.
  const verdict = await admission.decide(rt, { method: req.method, path, keyValue: req.keyValue, authorization: req.authorization, hostCount: 1 });
  if (!verdict.admitted) return refusal(verdict.problem, verdict.headers);
  rt.metrics.outcome[verdict.outcome].inc();
  const clientHeaders = verdict.rateHeaders;
  // jwt: the service behind learns the verified identity under the key header (replacing whatever the client sent).
  const upstreamHeaders = rt.jwt !== undefined && verdict.key !== undefined ? [...clientHeaders, rt.keyHeader, claimHeaderValue(verdict.key)] : clientHeaders;
  return { allowed: true, upstreamHeaders, clientHeaders };
}

/** The refusal when a check failed unexpectedly: the gateway is told to retry, never let through silently. */
export const checkFailed: CheckAnswer = refusal(
  { type: problemTypes.storeUnavailable, title: 'Service Unavailable', status: 503, detail: 'The rate limiter could not decide; retry shortly.' },
  ['retry-after', '1'],
);
