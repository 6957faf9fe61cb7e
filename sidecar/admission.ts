// What the gateway decides before it forwards anything, shared by plain requests (proxy.ts) and
// HTTP upgrades (upgrade.ts) so that both follow the same rules: origin-form target, the route's
// path pattern, exactly one Host, a valid key, ONE take from the bucket, the onStoreError policy,
// and the same outcome metrics. The callers only differ in how they write a refusal (a response
// object or a raw socket).
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Decision } from './bucket.ts';
import { problemTypes, type Problem } from './problem.ts';
import type { RouteRuntime } from './route-runtime.ts';
import { keyRejectionDetail, rejectKey } from './user-key.ts';

export type Verdict =
  | {
      readonly admitted: true;
      /** undefined when the store failed and the policy let the request through. */
      readonly decision: Decision | undefined;
      /** Limiter headers to add to the upstream's response (flat name/value list). */
      readonly rateHeaders: string[];
    }
  | { readonly admitted: false; readonly problem: Problem; readonly headers: string[] };

/** A refusal of the request target (not origin-form, or outside the route), before any header is read. */
export function refuseTarget(rt: RouteRuntime, url: string): Problem | undefined {
  if (url.charCodeAt(0) !== 47 /* '/' */) {
    rt.metrics.outcome.bad_request.inc();
    return { type: problemTypes.badRequest, title: 'Bad Request', status: 400, detail: 'Only origin-form request targets are accepted.' };
  }
  const q = url.indexOf('?');
  if (!rt.match(q < 0 ? url : url.slice(0, q))) {
    rt.metrics.outcome.no_route.inc();
    return { type: problemTypes.notFound, title: 'Not Found', status: 404, detail: `No route matches this path (route ${rt.routeId} serves ${rt.config.route.path}).` };
  }
  return undefined;
}

const refused = (problem: Problem, headers: string[] = []): Verdict => ({ admitted: false, problem, headers });

export class Admission {
  readonly #log: Logger;
  #storeErrors = 0;
  #lastStoreWarnMs = Number.NEGATIVE_INFINITY;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** The limiter's verdict for one request with `key` (first value of the key header). */
  async decide(rt: RouteRuntime, key: string | undefined, hostCount: number): Promise<Verdict> {
    const problem = this.refuseRequest(rt, key, hostCount);
    if (problem !== undefined) return refused(problem);
    const storeStart = performance.now();
    let decision: Decision;
    try {
      decision = await rt.store.take(rt.bucketPrefix + (key as string), rt.rule);
    } catch (err) {
      return this.storeFailed(rt, err);
    }
    return this.decided(rt, decision, storeStart);
  }

  /**
   * What is checked before the store is asked: exactly one Host, a valid key. A refusal, or
   * undefined when the request may take from its bucket (`key` is then a string).
   */
  refuseRequest(rt: RouteRuntime, key: string | undefined, hostCount: number): Problem | undefined {
    // RFC 9112 section 3.2: more than one Host line is a 400 (undici would refuse to forward it,
    // which used to surface as a 502).
    if (hostCount > 1) {
      rt.metrics.outcome.bad_request.inc();
      return { type: problemTypes.badRequest, title: 'Bad Request', status: 400, detail: 'A request must carry exactly one Host header.' };
    }
    const rejection = rejectKey(key);
    if (rejection !== undefined) {
      rt.metrics.outcome.bad_key.inc();
      if (this.#log.isLevelEnabled('debug')) this.#log.debug({ route: rt.routeId, reason: rejection }, 'request without a valid key');
      return { type: problemTypes.badKey, title: 'Invalid user id', status: rt.missingKeyStatus, detail: keyRejectionDetail[rejection](rt.config.limiter.keyHeader) };
    }
    return undefined;
  }

  /** The verdict for the store's decision (asked at `storeStart`, performance.now() ms). */
  decided(rt: RouteRuntime, decision: Decision, storeStart: number): Verdict {
    rt.metrics.storeDuration.observe((performance.now() - storeStart) / 1000);
    const rateHeaders: string[] = [];
    rt.rateHeaders(decision, rateHeaders);
    if (!decision.allowed) {
      rt.metrics.limited.inc();
      rt.metrics.outcome.limited.inc();
      const retryAfterS = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      rateHeaders.push('retry-after', String(retryAfterS));
      return refused(
        {
          type: problemTypes.rateLimited,
          title: 'Too Many Requests',
          status: 429,
          detail: `Rate limit of route ${rt.routeId} reached; retry in ${retryAfterS} s.`,
          retryAfterMs: decision.retryAfterMs,
        },
        rateHeaders,
      );
    }
    rt.metrics.allowed.inc();
    return { admitted: true, decision, rateHeaders };
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
    return { admitted: true, decision: undefined, rateHeaders: [] };
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
