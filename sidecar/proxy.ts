// The hot path: a node:http request handler that checks the target and the head, takes from the
// request's bucket and streams the request to the upstream through an undici Pool (keep-alive)
// and the response back (sidecar/exchange.ts). Hop-by-hop headers are dropped both ways
// (RFC 9110 section 7.6.1, sidecar/request-head.ts for the request); X-Forwarded-* are added.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { Admission, admitTarget, forwardIdentity, isRule, ruleFor, targetPath, type KeyOutcome } from './admission.ts';
import { Exchange, type ExchangeContext } from './exchange.ts';
import { hopLimitProblem } from './hop-limit.ts';
import { KeyInFlight } from './key-in-flight.ts';
import { problemTypes, sendProblem } from './problem.ts';
import { readRequestHead } from './request-head.ts';
import type { RouteRuntime, RuleRuntime } from './route-runtime.ts';

export interface ProxyOptions {
  readonly logger: Logger;
  /** The runtime a new request uses (swapped by reloads). */
  readonly runtime: () => RouteRuntime;
}

export class GatewayProxy {
  readonly #log: Logger;
  readonly #runtime: () => RouteRuntime;
  #inFlight = 0;
  #draining = false;
  #idleWaiters: (() => void)[] = [];
  readonly #exchanges: ExchangeContext;

  constructor(options: ProxyOptions) {
    this.#log = options.logger;
    this.#runtime = options.runtime;
    this.#exchanges = { log: options.logger, admission: new Admission(options.logger), released: this.#released, keys: new KeyInFlight() };
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Stop keeping connections alive; resolves when no request is in flight. */
  drain(): Promise<void> {
    this.#draining = true;
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.#inFlight++;
    if (this.#draining) res.shouldKeepAlive = false;
    const rt = this.#runtime();
    // The exchange owns the response's one 'close' listener, which ends its in-flight count.
    const exchange = new Exchange(this.#exchanges, req, res, rt, performance.now());
    try {
      this.#start(exchange, req, res, rt);
    } catch (err) {
      this.#log.error({ err }, 'proxy: unexpected failure');
      sendProblem(res, { type: problemTypes.upstreamUnavailable, title: 'Bad Gateway', status: 502, detail: 'The gateway failed to forward the request.' });
    }
  };

  readonly #released = (): void => {
    this.#inFlight--;
    if (this.#inFlight === 0 && this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w();
    }
  };

  /** Refuses a bad target or head at once; otherwise asks the rule's buckets with the forwarded head. */
  #start(exchange: Exchange, req: IncomingMessage, res: ServerResponse, rt: RouteRuntime): void {
    const target = admitTarget(rt, req.url ?? '');
    if (typeof target !== 'string') {
      sendProblem(res, target);
      return;
    }
    // Forwarded as matched (exchange.ts sends req.url): the upstream routes what the rule was chosen for.
    req.url = target;
    const path = targetPath(target);
    const { forward, key, authorization, hostCount, hasBody, hops } = readRequestHead(req, rt.keyHeader, rt.jwt !== undefined);
    const loop = hopLimitProblem(hops);
    if (loop !== undefined) {
      this.#log.warn({ hops, path }, 'proxy: forwarding loop, request refused');
      sendProblem(res, loop);
      return;
    }
    const admission = this.#exchanges.admission;
    const badHost = admission.refuseHost(rt, hostCount);
    if (badHost !== undefined) {
      sendProblem(res, badHost);
      return;
    }
    const rule = ruleFor(rt, req.method ?? 'GET', path);
    if (rule !== undefined && !isRule(rule)) {
      sendProblem(res, rule);
      return;
    }

    // No rule applies and unmatched requests are forwarded: no key is needed, nothing is taken.
    if (rule === undefined) {
      forwardIdentity(rt, forward, undefined, key);
      exchange.forwardUnlimited(forward, hasBody);
      return;
    }
    const outcome = admission.keyFor(rt, key, authorization);
    if (outcome instanceof Promise) {
      outcome.then(
        (o) => this.#ask(exchange, res, rt, rule, o, forward, hasBody),
        (err: unknown) => {
          this.#log.error({ err }, 'proxy: unexpected failure');
          sendProblem(res, { type: problemTypes.upstreamUnavailable, title: 'Bad Gateway', status: 502, detail: 'The gateway failed to forward the request.' });
        },
      );
      return;
    }
    this.#ask(exchange, res, rt, rule, outcome, forward, hasBody);
  }

  #ask(exchange: Exchange, res: ServerResponse, rt: RouteRuntime, rule: RuleRuntime, outcome: KeyOutcome, forward: string[], hasBody: boolean): void {
    if (typeof outcome !== 'string') {
      sendProblem(res, outcome.problem, outcome.headers);
      return;
    }
    const overloaded = this.#exchanges.admission.shed(rt);
    if (overloaded !== undefined) {
      sendProblem(res, overloaded, ['retry-after', '1']);
      return;
    }
    forwardIdentity(rt, forward, outcome, undefined);
    exchange.ask(rule, outcome, forward, hasBody);
  }
}
