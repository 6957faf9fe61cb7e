// The limiter's admission pipeline: one list of named steps that every front door runs (the
// proxy's plain requests, upgrades, and the decision service's HTTP and gRPC checks), ending in
// one tagged verdict. A front door reads the request's head its own way, runs the steps, and
// writes the verdict its own way (a response, a raw socket, a CheckResponse); no step is written
// anywhere else. The steps run synchronously for as long as they can: only a token not remembered
// yet (jwt) and a store that answers later make the verdict come afterwards, through settle().
// The verdict is in verdict.ts, the key step in admission-key.ts.
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Decision } from '../lib/token-bucket/bucket.ts';
import type { TakeSink } from '../lib/token-bucket/bucket-store.ts';
import { canonicalTarget, targetRejectionDetail } from '../lib/web/canonical-target.ts';
import { applyKey, key, type KeyOutcome } from './admission-key.ts';
import type { Admission } from './admission.ts';
import { hopLimitProblem } from './hop-limit.ts';
import { problemTypes, type Problem } from './problem.ts';
import { selectRule, type RouteRuntime, type RuleRuntime } from './route-runtime.ts';
import { claimHeaderValue } from './user-key.ts';
import { PENDING, problem, type AdmissionHead, type Verdict } from './verdict.ts';

/** The head of a request not run yet. */
const NO_HEAD: AdmissionHead = { key: undefined, authorization: undefined, hostCount: 0, hops: 0 };

const badRequest = (rt: RouteRuntime, detail: string): Verdict => {
  rt.metrics.outcome.bad_request.inc();
  return problem({ type: problemTypes.badRequest, title: 'Bad Request', status: 400, detail });
};

/** The path of an origin-form target (without the query). */
const targetPath = (url: string): string => {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
};

/**
 * One request's way through the steps. A front door extends it with what it does with the
 * verdict (settle) and, for the proxy, the hold step; the object is also the store's TakeSink, so
 * the hot path makes no closure or promise of its own.
 */
export abstract class AdmissionRequest implements TakeSink {
  readonly admission: Admission;
  readonly rt: RouteRuntime;
  /** The client connection, counted (and read no further) while its take is awaited; none for gRPC. */
  readonly socket: Socket | undefined;
  method = 'GET';
  /** The target as received, then (target step) the canonical one it is matched and forwarded with. */
  target = '';
  /** The canonical target's path, without the query (target step). */
  path = '';
  head = NO_HEAD;
  rule: RuleRuntime | undefined;
  /** The key charged (key step). */
  key: string | undefined;
  /** performance.now() when the store was asked, ms. */
  storeStart = 0;

  constructor(admission: Admission, rt: RouteRuntime, socket: Socket | undefined) {
    this.admission = admission;
    this.rt = rt;
    this.socket = socket;
  }

  /** What the front door does with the verdict that came after run() returned PENDING (or during it). */
  protected abstract settle(verdict: Verdict): void;
  /** A failure no step expected (a bug): the front door answers it as its own error. */
  protected abstract fault(err: unknown): void;

  /** The hold step: the proxy bounds the request bodies one key has arriving; undefined: go on. */
  hold(): Verdict | undefined {
    return undefined;
  }

  /** Runs the steps: the verdict, or PENDING when settle() gives it (it may already have). */
  run(method: string, target: string, head: AdmissionHead): Verdict {
    this.method = method;
    this.target = target;
    this.head = head;
    return runFrom(this, 0);
  }

  /** The key step's verdict on a token verified later: the remaining steps, then settle(). */
  keyed(outcome: KeyOutcome): void {
    const verdict = applyKey(this, outcome) ?? runFrom(this, KEY_STEP + 1);
    if (verdict !== PENDING) this.settle(verdict);
  }

  taken(decision: Decision): void {
    this.admission.overload.settled(this.socket);
    this.settle(decided(this, decision));
  }

  failed(err: Error): void {
    this.admission.overload.settled(this.socket);
    // The route's onStoreError policy: refused with 503, or let through untaken.
    const denied = this.admission.storeFailed(this.rt, err);
    this.settle(
      denied === undefined
        ? admitted(this, [], 'store_error_allowed')
        : problem(denied, ['retry-after', '1']),
    );
  }

  /** Resumes from a promise of a step (the key's); a rejection is a fault. */
  fromPromise(result: Promise<KeyOutcome>): Verdict {
    result.then(
      (o) => this.keyed(o),
      (err: unknown) => this.fault(err),
    );
    return PENDING;
  }
}

/** Runs an AdmissionRequest's steps for a front door that awaits its verdict (upgrades, decisions). */
export class AwaitedAdmission extends AdmissionRequest {
  #resolve: (v: Verdict) => void = () => undefined;
  #reject: (err: unknown) => void = () => undefined;

  admit(method: string, target: string, head: AdmissionHead): Promise<Verdict> {
    // The executor runs at once: a settle() during run() (a store answering at once) resolves it.
    return new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
      const verdict = this.run(method, target, head);
      if (verdict !== PENDING) resolve(verdict);
    });
  }

  protected settle(verdict: Verdict): void {
    this.#resolve(verdict);
  }

  protected fault(err: unknown): void {
    this.#reject(err);
  }
}

/** The key header value the upstream reads: the identity charged, else (header key) the one sent. */
function identityOf(a: AdmissionRequest): string | undefined {
  if (a.rt.jwt === undefined) return a.key ?? a.head.key;
  return a.key === undefined ? undefined : claimHeaderValue(a.key);
}

const admitted = (
  a: AdmissionRequest,
  headers: string[],
  outcome: 'forwarded' | 'store_error_allowed',
): Verdict => ({ kind: 'admit', headers, outcome, identity: identityOf(a) });

// The steps, in order. Each answers a verdict (the request's end) or undefined (the next step).

/** Origin-form, canonical (lib/web/canonical-target.ts) and inside the route's path, before any header is read. */
function target(a: AdmissionRequest): Verdict | undefined {
  const rt = a.rt;
  if (a.target.charCodeAt(0) !== 47 /* '/' */)
    return badRequest(rt, 'Only origin-form request targets are accepted.');
  const canonical = canonicalTarget(a.target, rt.paths);
  if (typeof canonical !== 'string')
    return badRequest(rt, targetRejectionDetail[canonical.rejected]);
  const path = targetPath(canonical);
  if (!rt.match(path)) {
    rt.metrics.outcome.no_route.inc();
    return problem({
      type: problemTypes.notFound,
      title: 'Not Found',
      status: 404,
      detail: 'No route matches this path.',
    });
  }
  a.target = canonical;
  a.path = path;
  return undefined;
}

/** A forwarding loop (too many Portcullis gateways passed): 508. */
function hops(a: AdmissionRequest): Verdict | undefined {
  const hopCount = a.head.hops;
  const loop = hopLimitProblem(hopCount);
  if (loop === undefined) return undefined;
  a.admission.log.warn({ hops: hopCount, path: a.path }, 'forwarding loop, request refused');
  return problem(loop);
}

/** RFC 9112 section 3.2: more than one Host line is a 400 (undici would refuse to forward it, which used to surface as a 502). */
function host(a: AdmissionRequest): Verdict | undefined {
  return a.head.hostCount <= 1
    ? undefined
    : badRequest(a.rt, 'A request must carry exactly one Host header.');
}

/** The first rule matching the method and path; none: forwarded untaken, or refused (unmatched: refuse). */
function rule(a: AdmissionRequest): Verdict | undefined {
  const rt = a.rt;
  a.rule = selectRule(rt, a.method, a.path);
  if (a.rule !== undefined) return undefined;
  if (rt.unmatched === 'forward') return admitted(a, [], 'forwarded');
  rt.metrics.outcome.no_route.inc();
  return problem({
    type: problemTypes.notFound,
    title: 'Not Found',
    status: 404,
    detail: `No rule of this route applies to ${a.method} requests on this path.`,
  });
}

/** The sidecar itself overloaded (admission.ts): 503 + Retry-After rather than a take it could not hear in time. */
function shed(a: AdmissionRequest): Verdict | undefined {
  const overloaded = a.admission.shed(a.rt);
  return overloaded === undefined ? undefined : problem(overloaded, ['retry-after', '1']);
}

/** The front door's own bound (the proxy's request bodies per key). */
function hold(a: AdmissionRequest): Verdict | undefined {
  return a.hold();
}

/** ONE take from the rule's buckets; the store answers through the request (a TakeSink), now or later. */
function take(a: AdmissionRequest): Verdict {
  const rule = a.rule as RuleRuntime;
  a.storeStart = performance.now();
  a.admission.overload.started(a.socket);
  a.rt.store.take(rule.bucketPrefix + (a.key as string), rule.limits, rule.costs, a);
  return PENDING;
}

/** The steps every front door runs, in order (named for logs and tests). */
export const steps = [target, hops, host, rule, key, shed, hold, take] as const;
const KEY_STEP = steps.indexOf(key);

function runFrom(a: AdmissionRequest, from: number): Verdict {
  for (let i = from; i < steps.length; i++) {
    const verdict = (steps[i] as (a: AdmissionRequest) => Verdict | undefined)(a);
    if (verdict !== undefined) return verdict;
  }
  throw new Error('the take step ends every admission');
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
  headers.push('retry-after', String(retryAfter));
  // No route or rule name: the client sees the policy's opaque name only (route-runtime.ts).
  const limited: Problem = {
    type: problemTypes.rateLimited,
    title: 'Too Many Requests',
    status: 429,
    detail: `Rate limit reached; retry in ${retryAfter} s.`,
    retryAfterMs: decision.retryAfterMs,
  };
  return { kind: 'limited', retryAfter, problem: limited, headers };
}
