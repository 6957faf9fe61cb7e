// What the gateway decides before it forwards anything, shared by plain requests (proxy.ts) and
// HTTP upgrades (upgrade.ts) so that both follow the same rules: origin-form target made canonical,
// the route's path pattern, exactly one Host, the first rule matching the method and path, a valid key (the
// key header, or a claim of a verified access token), ONE take from the rule's buckets, the
// onStoreError policy, shadow mode, and the same outcome metrics. The callers only differ in how
// they write a refusal (a response object or a raw socket).
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Decision } from '../lib/token-bucket/bucket.ts';
import { canonicalTarget, targetRejectionDetail } from '../lib/web/canonical-target.ts';
import type { JwtKeyResult } from './jwt-key.ts';
import { OverloadGuard } from './overload.ts';
import { problemTypes, type Problem } from './problem.ts';
import { selectRule, type RouteRuntime, type RuleRuntime } from './route-runtime.ts';
import { claimHeaderValue, keyRejectionDetail, rejectKey } from './user-key.ts';
import { takeAll } from '../lib/token-bucket/take-promise.ts';

export type Verdict =
  | {
      readonly admitted: true;
      /** undefined when the store failed and the policy let the request through, or no rule applied. */
      readonly decision: Decision | undefined;
      /** How the request's outcome is counted once forwarded. */
      readonly outcome: 'forwarded' | 'store_error_allowed';
      /** The bucket key, when decide() resolved one (jwt: the verified claim to forward). */
      readonly key?: string;
      /** Limiter headers to add to the upstream's response (flat name/value list). */
      readonly rateHeaders: string[];
    }
  | { readonly admitted: false; readonly problem: Problem; readonly headers: string[] };

/** What the limiter reads from a request's head. */
export interface RequestHead {
  readonly method: string;
  /** The target's path, without the query. */
  readonly path: string;
  /** First value of the key header (header key source). */
  readonly keyValue: string | undefined;
  /** The Authorization header (jwt key source). */
  readonly authorization: string | undefined;
  readonly hostCount: number;
}

/** The path of an origin-form target (without the query). */
export const targetPath = (url: string): string => {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
};

/**
 * The target a request is matched on and forwarded with (canonical, lib/web/canonical-target.ts),
 * or its refusal (not origin-form, not canonicalisable, or outside the route), before any header
 * is read.
 */
export function admitTarget(rt: RouteRuntime, url: string): string | Problem {
  if (url.charCodeAt(0) !== 47 /* '/' */) {
    rt.metrics.outcome.bad_request.inc();
    return { type: problemTypes.badRequest, title: 'Bad Request', status: 400, detail: 'Only origin-form request targets are accepted.' };
  }
  const target = canonicalTarget(url, rt.paths);
  if (typeof target !== 'string') {
    rt.metrics.outcome.bad_request.inc();
    return { type: problemTypes.badRequest, title: 'Bad Request', status: 400, detail: targetRejectionDetail[target.rejected] };
  }
  if (!rt.match(targetPath(target))) {
    rt.metrics.outcome.no_route.inc();
    return { type: problemTypes.notFound, title: 'Not Found', status: 404, detail: 'No route matches this path.' };
  }
  return target;
}

/**
 * Adds the one key header line the upstream reads: the identity charged (a verified claim encoded
 * by claimHeaderValue), else, with the header key, the first one the client sent (no rule charged
 * it); none for a jwt request no rule verified. readRequestHead forwarded no key header line itself.
 */
export function forwardIdentity(rt: RouteRuntime, forward: string[], charged: string | undefined, sent: string | undefined): void {
  const identity = charged ?? (rt.jwt === undefined ? sent : undefined);
  if (identity !== undefined) forward.push(rt.config.limiter.keyHeader, rt.jwt === undefined ? identity : claimHeaderValue(identity));
}

/** The rule for a request: a rule, `undefined` to forward unlimited, or a refusal (no rule and unmatched: refuse). */
export function ruleFor(rt: RouteRuntime, method: string, path: string): RuleRuntime | undefined | Problem {
  const rule = selectRule(rt, method, path);
  if (rule !== undefined || rt.unmatched === 'forward') return rule;
  rt.metrics.outcome.no_route.inc();
  return { type: problemTypes.notFound, title: 'Not Found', status: 404, detail: `No rule of this route applies to ${method} requests on this path.` };
}

const refused = (problem: Problem, headers: string[] = []): Verdict => ({ admitted: false, problem, headers });
/** Forwarded without a take (no rule applies). */
export const unlimited: Verdict = { admitted: true, decision: undefined, outcome: 'forwarded', rateHeaders: [] };

/** A refused bearer token as RFC 6750 asks: no error code when none was sent. */
function bearerRefusal(rt: RouteRuntime, result: Extract<JwtKeyResult, { ok: false }>): { problem: Problem; headers: string[] } {
  if (result.reason === 'unavailable') {
    rt.metrics.outcome.key_unavailable.inc();
    return {
      problem: { type: problemTypes.keyUnavailable, title: 'Service Unavailable', status: 503, detail: result.detail },
      headers: ['retry-after', '1'],
    };
  }
  rt.metrics.outcome.bad_key.inc();
  const challenge = result.reason === 'missing' ? 'Bearer' : `Bearer error="invalid_token", error_description="${result.detail.replaceAll('"', "'")}"`;
  return {
    problem: { type: problemTypes.invalidToken, title: 'Unauthorized', status: 401, detail: result.detail },
    headers: ['www-authenticate', challenge],
  };
}

/** A key, or the refusal (problem and headers) when there is none. */
export type KeyOutcome = string | { readonly problem: Problem; readonly headers: string[] };

export class Admission {
  /** Decisions awaited and the event loop's lag: when to shed, and which connections to stop reading. */
  readonly overload = new OverloadGuard();
  readonly #log: Logger;
  #storeErrors = 0;
  #lastStoreWarnMs = Number.NEGATIVE_INFINITY;
  #shed = 0;
  #lastShedWarnMs = Number.NEGATIVE_INFINITY;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** The limiter's whole verdict for one request head (the upgrade path; the proxy runs the same steps without promises). */
  async decide(rt: RouteRuntime, head: RequestHead): Promise<Verdict> {
    const hostProblem = this.refuseHost(rt, head.hostCount);
    if (hostProblem !== undefined) return refused(hostProblem);
    const rule = ruleFor(rt, head.method, head.path);
    if (rule === undefined) return unlimited;
    if (!isRule(rule)) return refused(rule);
    const key = await this.keyFor(rt, head.keyValue, head.authorization);
    if (typeof key !== 'string') return refused(key.problem, key.headers);
    const overloaded = this.shed(rt);
    if (overloaded !== undefined) return refused(overloaded, ['retry-after', '1']);
    const storeStart = performance.now();
    let verdict: Verdict;
    try {
      verdict = this.decided(rt, rule, await takeAll(rt.store, rule.bucketPrefix + key, rule.limits, rule.costs), storeStart);
    } catch (err) {
      verdict = this.storeFailed(rt, err);
    }
    return verdict.admitted ? { ...verdict, key } : verdict;
  }

  /** RFC 9112 section 3.2: more than one Host line is a 400 (undici would refuse to forward it, which used to surface as a 502). */
  refuseHost(rt: RouteRuntime, hostCount: number): Problem | undefined {
    if (hostCount <= 1) return undefined;
    rt.metrics.outcome.bad_request.inc();
    return { type: problemTypes.badRequest, title: 'Bad Request', status: 400, detail: 'A request must carry exactly one Host header.' };
  }

  /**
   * The bucket key: the key header's first value, or the claim of the verified bearer token (a
   * promise only when the token is not remembered yet).
   */
  keyFor(rt: RouteRuntime, keyValue: string | undefined, authorization: string | undefined): KeyOutcome | Promise<KeyOutcome> {
    const jwt = rt.jwt;
    if (jwt === undefined) return this.#headerKey(rt, keyValue);
    const result = jwt.resolve(authorization);
    if (result instanceof Promise) return result.then((r) => this.#jwtKey(rt, r));
    return this.#jwtKey(rt, result);
  }

  #headerKey(rt: RouteRuntime, value: string | undefined): KeyOutcome {
    const rejection = rejectKey(value);
    if (rejection === undefined) return value as string;
    rt.metrics.outcome.bad_key.inc();
    if (this.#log.isLevelEnabled('debug')) this.#log.debug({ route: rt.routeId, reason: rejection }, 'request without a valid key');
    return {
      problem: { type: problemTypes.badKey, title: 'Invalid user id', status: rt.missingKeyStatus, detail: keyRejectionDetail[rejection](rt.config.limiter.keyHeader) },
      headers: [],
    };
  }

  #jwtKey(rt: RouteRuntime, result: JwtKeyResult): KeyOutcome {
    if (result.ok) return result.key;
    if (result.reason === 'unavailable') this.#log.warn({ route: rt.routeId, detail: result.detail }, 'access token not verifiable: key set unavailable');
    else if (this.#log.isLevelEnabled('debug')) this.#log.debug({ route: rt.routeId, reason: result.reason, detail: result.detail }, 'request without a valid access token');
    return bearerRefusal(rt, result);
  }

  /** The verdict for the store's decision (asked at `storeStart`, performance.now() ms). */
  decided(rt: RouteRuntime, rule: RuleRuntime, decision: Decision, storeStart: number): Verdict {
    rt.metrics.storeDuration.observe((performance.now() - storeStart) / 1000);
    const rateHeaders: string[] = [];
    rule.rateHeaders(decision, rateHeaders);
    if (!decision.allowed) {
      rule.metrics.limited.inc();
      const retryAfterS = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      if (!rule.enforce) {
        // Shadow mode: the would-be refusal is counted and logged, and the request goes on.
        if (this.#log.isLevelEnabled('debug')) this.#log.debug({ route: rt.routeId, rule: rule.name, retryAfterS }, 'shadow rule would refuse; forwarded');
        return { admitted: true, decision, outcome: 'forwarded', rateHeaders };
      }
      rt.metrics.outcome.limited.inc();
      rateHeaders.push('retry-after', String(retryAfterS));
      return refused(
        {
          type: problemTypes.rateLimited,
          title: 'Too Many Requests',
          status: 429,
          // No route or rule name: the client sees the policy's opaque name only (route-runtime.ts).
          detail: `Rate limit reached; retry in ${retryAfterS} s.`,
          retryAfterMs: decision.retryAfterMs,
        },
        rateHeaders,
      );
    }
    rule.metrics.allowed.inc();
    return { admitted: true, decision, outcome: 'forwarded', rateHeaders };
  }

  /**
   * A refusal when the sidecar itself is overloaded (too many decisions awaited, or the event loop
   * too late): shed with 503 and Retry-After, counted, rather than asked of a store it could not
   * hear in time or forwarded undecided. undefined: go on.
   */
  shed(rt: RouteRuntime): Problem | undefined {
    const reason = this.overload.shed(rt.config.overload);
    if (reason === undefined) return undefined;
    rt.metrics.outcome.overloaded.inc();
    this.#shed++;
    const now = performance.now();
    if (now - this.#lastShedWarnMs >= 5000) {
      this.#log.warn(
        { route: rt.routeId, reason, shed: this.#shed, pendingTakes: this.overload.pendingTakes, eventLoopLagMs: Math.round(this.overload.lagMs) },
        'sidecar overloaded; shedding requests with 503',
      );
      this.#shed = 0;
      this.#lastShedWarnMs = now;
    }
    return { type: problemTypes.overloaded, title: 'Service Unavailable', status: 503, detail: 'The gateway is overloaded; retry shortly.' };
  }

  /** The refusal of a request whose key already has `max` requests in flight (nothing charged). */
  keyBusy(rt: RouteRuntime, max: number): Verdict {
    rt.metrics.outcome.key_in_flight.inc();
    if (this.#log.isLevelEnabled('debug')) this.#log.debug({ route: rt.routeId, max }, 'key has too many requests in flight; refused');
    return refused(
      { type: problemTypes.rateLimited, title: 'Too Many Requests', status: 429, detail: `Too many request bodies of this client still arriving (at most ${max}); retry once one has finished.` },
      ['retry-after', '1'],
    );
  }

  /** The verdict when the store could not decide: the route's onStoreError policy. */
  storeFailed(rt: RouteRuntime, err: unknown): Verdict {
    rt.metrics.storeError.inc();
    this.#warnStoreError(rt, err);
    if (rt.onStoreError === 'deny') {
      rt.metrics.outcome.store_error_denied.inc();
      return refused(
        { type: problemTypes.storeUnavailable, title: 'Service Unavailable', status: 503, detail: 'The rate limiter cannot decide right now; retry shortly.' },
        ['retry-after', '1'],
      );
    }
    return { admitted: true, decision: undefined, outcome: 'store_error_allowed', rateHeaders: [] };
  }

  /** One warning per 5 s at most while the store fails (with the count since the last one). */
  #warnStoreError(rt: RouteRuntime, err: unknown): void {
    this.#storeErrors++;
    const now = performance.now();
    if (now - this.#lastStoreWarnMs < 5000) return;
    this.#log.warn(
      { route: rt.routeId, policy: rt.onStoreError, errors: this.#storeErrors, err: err instanceof Error ? err.message : String(err) },
      'limiter store unavailable; applying onStoreError policy',
    );
    this.#storeErrors = 0;
    this.#lastStoreWarnMs = now;
  }
}

/** A rule (not a refusal). */
export const isRule = (r: RuleRuntime | Problem): r is RuleRuntime => 'limits' in r;
