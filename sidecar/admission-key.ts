// The key step of the admission pipeline (pipeline.ts): the bucket key from the key header, or from
// the claim of a verified bearer token (jwt; later, when the token is not remembered yet), or the
// refusal when there is none.
import type { JwtKeyResult } from './jwt-key.ts';
import { resumeAfter, type AdmissionRequest } from './pipeline.ts';
import { problemTypes, type Problem } from './problem.ts';
import { keyRejectionDetail, rejectKey } from './user-key.ts';
import { problem, type Verdict } from './verdict.ts';

/** A key, or the refusal (problem and headers) when there is none. */
export type KeyOutcome = string | { readonly problem: Problem; readonly headers: string[] };

/** The bucket key: the key header's first value, or the claim of the verified bearer token (later when not remembered yet). */
export function key(a: AdmissionRequest): Verdict | undefined {
  const rt = a.rt;
  const head = a.head;
  const jwt = rt.jwt;
  if (jwt === undefined) return applyKey(a, headerKey(a, head.key));
  const result = jwt.resolve(head.authorization);
  if (result instanceof Promise)
    return resumeAfter(
      a,
      result.then((r) => jwtKey(a, r)),
    );
  return applyKey(a, jwtKey(a, result));
}

export function applyKey(a: AdmissionRequest, outcome: KeyOutcome): Verdict | undefined {
  if (typeof outcome !== 'string') return problem(outcome.problem, outcome.headers);
  a.key = outcome;
  return undefined;
}

function headerKey(a: AdmissionRequest, value: string | undefined): KeyOutcome {
  const rejection = rejectKey(value);
  if (rejection === undefined) return value as string;
  const rt = a.rt;
  rt.metrics.outcome.bad_key.inc();
  const log = a.admission.log;
  if (log.isLevelEnabled('debug'))
    log.debug({ route: rt.routeId, reason: rejection }, 'request without a valid key');
  return {
    problem: {
      type: problemTypes.badKey,
      title: 'Invalid user id',
      status: rt.missingKeyStatus,
      detail: keyRejectionDetail[rejection](rt.config.limiter.keyHeader),
    },
    headers: [],
  };
}

/** A verified claim, or a refused bearer token as RFC 6750 asks (no error code when none was sent). */
function jwtKey(a: AdmissionRequest, result: JwtKeyResult): KeyOutcome {
  if (result.ok) return result.key;
  const rt = a.rt;
  const log = a.admission.log;
  if (result.reason === 'unavailable') {
    log.warn(
      { route: rt.routeId, detail: result.detail },
      'access token not verifiable: key set unavailable',
    );
    rt.metrics.outcome.key_unavailable.inc();
    return {
      problem: {
        type: problemTypes.keyUnavailable,
        title: 'Service Unavailable',
        status: 503,
        detail: result.detail,
      },
      headers: ['retry-after', '1'],
    };
  }
  if (log.isLevelEnabled('debug'))
    log.debug(
      { route: rt.routeId, reason: result.reason, detail: result.detail },
      'request without a valid access token',
    );
  rt.metrics.outcome.bad_key.inc();
  const challenge =
    result.reason === 'missing'
      ? 'Bearer'
      : `Bearer error="invalid_token", error_description="${result.detail.replaceAll('"', "'")}"`;
  return {
    problem: {
      type: problemTypes.invalidToken,
      title: 'Unauthorized',
      status: 401,
      detail: result.detail,
    },
    headers: ['www-authenticate', challenge],
  };
}
