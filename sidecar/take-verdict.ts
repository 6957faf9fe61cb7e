// The take step's end (pipeline.ts): the verdict on what the store answered a front door. Each
// front door is the store's TakeSink and calls these with its request, then acts on the verdict.
import { performance } from 'node:perf_hooks';
import type { Decision } from '../lib/token-bucket/bucket.ts';
import type { AdmissionRequest } from './pipeline.ts';
import type { RuleRuntime } from './route-runtime.ts';
import { admitted, limited, problem, type Verdict } from './verdict.ts';

/** The store decided: the verdict on its decision. */
export function takenVerdict(a: AdmissionRequest, decision: Decision): Verdict {
  a.admission.overload.settled(a.socket);
  return decided(a, decision);
}

/** The store could not decide: the route's onStoreError policy, refused with 503 or let through untaken. */
export function failedVerdict(a: AdmissionRequest, err: Error): Verdict {
  a.admission.overload.settled(a.socket);
  const denied = a.admission.storeFailed(a.rt, err);
  return denied === undefined
    ? admitted(a, [], 'store_error_allowed')
    : problem(denied, ['retry-after', '1']);
}

/** The verdict on the store's decision: admitted with the limiter headers, limited (429), or shadow. */
function decided(a: AdmissionRequest, decision: Decision): Verdict {
  const rt = a.rt;
  const rule = a.rule as RuleRuntime;
  rt.metrics.storeDuration.observe((performance.now() - a.storeStart) / 1000);
  const headers: string[] = [];
  rule.rateHeaders(decision, headers);
  if (decision.allowed) {
    rule.metrics.allowed.inc();
    return admitted(a, headers, 'forwarded');
  }
  rule.metrics.limited.inc();
  const retryAfter = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
  const log = a.admission.log;
  if (!rule.enforce) {
    // Shadow mode: the would-be refusal is counted and logged, and the request goes on.
    if (log.isLevelEnabled('debug'))
      log.debug(
        { route: rt.routeId, rule: rule.name, retryAfterS: retryAfter },
        'shadow rule would refuse; forwarded',
      );
    return admitted(a, headers, 'forwarded');
  }
  rt.metrics.outcome.limited.inc();
  // No route or rule name: the client sees the policy's opaque name only (route-runtime.ts).
  const detail = `Rate limit reached; retry in ${retryAfter} s.`;
  return limited(retryAfter, detail, headers, decision.retryAfterMs);
}
