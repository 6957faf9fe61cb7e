// What the admission steps (pipeline.ts) share across the requests of one front door: the
// overload guard (decisions awaited, the event loop's lag), the logger, and the warnings that are
// said at most once per 5 s however many requests hit them (the store failing, shedding), and the
// request bodies each key has in flight (the hold step's).
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { KeyInFlight } from './key-in-flight.ts';
import { OverloadGuard } from './overload.ts';
import { problemTypes, type Problem } from './problem.ts';
import type { RouteRuntime } from './route-runtime.ts';

export class Admission {
  /** Decisions awaited and the event loop's lag: when to shed, and which connections to stop reading. */
  readonly overload = new OverloadGuard();
  /** Request bodies in flight per key (maxInFlightPerKey; the proxy's hold step). */
  readonly keys = new KeyInFlight();
  readonly log: Logger;
  #storeErrors = 0;
  #lastStoreWarnMs = Number.NEGATIVE_INFINITY;
  #shed = 0;
  #lastShedWarnMs = Number.NEGATIVE_INFINITY;

  constructor(log: Logger) {
    this.log = log;
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
      this.log.warn(
        {
          route: rt.routeId,
          reason,
          shed: this.#shed,
          pendingTakes: this.overload.pendingTakes,
          eventLoopLagMs: Math.round(this.overload.lagMs),
        },
        'sidecar overloaded; shedding requests with 503',
      );
      this.#shed = 0;
      this.#lastShedWarnMs = now;
    }
    return {
      type: problemTypes.overloaded,
      title: 'Service Unavailable',
      status: 503,
      detail: 'The gateway is overloaded; retry shortly.',
    };
  }

  /** The store could not decide: counted, warned, and the route's onStoreError policy (deny: the refusal; allow: undefined). */
  storeFailed(rt: RouteRuntime, err: unknown): Problem | undefined {
    rt.metrics.storeError.inc();
    this.#warnStoreError(rt, err);
    if (rt.onStoreError === 'allow') return undefined;
    rt.metrics.outcome.store_error_denied.inc();
    return {
      type: problemTypes.storeUnavailable,
      title: 'Service Unavailable',
      status: 503,
      detail: 'The rate limiter cannot decide right now; retry shortly.',
    };
  }

  /** One warning per 5 s at most while the store fails (with the count since the last one). */
  #warnStoreError(rt: RouteRuntime, err: unknown): void {
    this.#storeErrors++;
    const now = performance.now();
    if (now - this.#lastStoreWarnMs < 5000) return;
    this.log.warn(
      {
        route: rt.routeId,
        policy: rt.onStoreError,
        errors: this.#storeErrors,
        err: err instanceof Error ? err.message : String(err),
      },
      'limiter store unavailable; applying onStoreError policy',
    );
    this.#storeErrors = 0;
    this.#lastStoreWarnMs = now;
  }
}
