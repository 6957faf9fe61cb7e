// The limiter's admission pipeline: one list of named steps that every front door runs (the
// proxy's plain requests, upgrades, and the decision service's HTTP and gRPC checks), ending in
// one tagged verdict. A front door reads the request's head its own way, runs the steps, and
// writes the verdict its own way (a response, a raw socket, a CheckResponse); no step is written
// anywhere else. The steps run synchronously for as long as they can and end in one take from
// the store, which answers the front door itself (a TakeSink; take-verdict.ts turns the answer
// into the verdict), so a request's control goes forward from file to file and never comes back
// here: run() returns a refusal decided before the take, the store's answer goes to the front
// door. Only a token not remembered yet (jwt) resumes the steps here once it is verified.
// The verdict is in verdict.ts, the key step in admission-key.ts, the hold step in key-in-flight.ts.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { TakeSink } from '../lib/token-bucket/bucket-store.ts';
import { canonicalTarget, targetRejectionDetail } from '../lib/web/canonical-target.ts';
import { applyKey, key, type KeyOutcome } from './admission-key.ts';
import type { Admission } from './admission.ts';
import { hopLimitProblem } from './hop-limit.ts';
import { hold } from './key-in-flight.ts';
import { problemTypes } from './problem.ts';
import { selectRule, type RouteRuntime, type RuleRuntime } from './route-runtime.ts';
import { admitted, PENDING, problem, type AdmissionHead, type Verdict } from './verdict.ts';

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
 * What a front door is to the pipeline: the store's TakeSink (take-verdict.ts turns its answer
 * into the verdict), and where a verdict goes that comes after run() returned PENDING otherwise.
 */
export interface FrontDoor extends TakeSink {
  /** The verdict of the steps resumed once a token was verified (run() had returned PENDING). */
  settle(verdict: Verdict): void;
  /** A failure no step expected (a bug): the front door answers it as its own error. */
  fault(err: unknown): void;
}

/** One request as the steps fill it in; its front door is composed in, not extended. */
export class AdmissionRequest {
  readonly admission: Admission;
  readonly rt: RouteRuntime;
  /** The client connection, counted (and read no further) while its take is awaited; none for gRPC. */
  readonly socket: Socket | undefined;
  readonly door: FrontDoor;
  /** The request body still to arrive, bounded per key by the hold step (the proxy's only). */
  readonly body: IncomingMessage | undefined;
  method = 'GET';
  /** The target as received, then (target step) the canonical one it is matched and forwarded with. */
  target = '';
  /** The canonical target's path, without the query (target step). */
  path = '';
  head = NO_HEAD;
  rule: RuleRuntime | undefined;
  /** The key charged (key step). */
  key: string | undefined;
  /** The key whose bodies in flight count this request's (hold step), until released. */
  held: string | undefined;
  /** performance.now() when the store was asked, ms. */
  storeStart = 0;

  constructor(
    admission: Admission,
    rt: RouteRuntime,
    socket: Socket | undefined,
    door: FrontDoor,
    body?: IncomingMessage,
  ) {
    this.admission = admission;
    this.rt = rt;
    this.socket = socket;
    this.door = door;
    this.body = body;
  }
}

/** Runs the steps: the verdict, or PENDING when the front door hears it (it may already have). */
export function run(
  a: AdmissionRequest,
  method: string,
  target: string,
  head: AdmissionHead,
): Verdict {
  a.method = method;
  a.target = target;
  a.head = head;
  return runFrom(a, 0);
}

/** The key step's outcome comes later (a token verified): the remaining steps then; a rejection is a fault. */
export function resumeAfter(a: AdmissionRequest, result: Promise<KeyOutcome>): Verdict {
  result.then(
    (outcome) => {
      const verdict = applyKey(a, outcome) ?? runFrom(a, KEY_STEP + 1);
      if (verdict !== PENDING) a.door.settle(verdict);
    },
    (err: unknown) => a.door.fault(err),
  );
  return PENDING;
}

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

/** ONE take from the rule's buckets; the store answers the front door (a TakeSink), now or later. */
function take(a: AdmissionRequest): Verdict {
  const rule = a.rule as RuleRuntime;
  a.storeStart = performance.now();
  a.admission.overload.started(a.socket);
  a.rt.store.take(rule.bucketPrefix + (a.key as string), rule.limits, rule.costs, a.door);
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
