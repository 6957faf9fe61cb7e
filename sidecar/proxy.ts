// The hot path: a node:http request handler that reads each request's head (request-head.ts),
// runs the admission pipeline (pipeline.ts) on it, and leaves the request from its verdict on to
// an Exchange (exchange.ts), which streams it to the upstream through an undici Pool (keep-alive)
// and the response back. A request's control goes forward through these files and never back:
// the store answers the Exchange, not the pipeline. Hop-by-hop headers are dropped both ways
// (RFC 9110 section 7.6.1); X-Forwarded-* are added.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { Admission } from './admission.ts';
import { Exchange, type ExchangeContext } from './exchange.ts';
import { run } from './pipeline.ts';
import { problemTypes, sendProblem } from './problem.ts';
import { readRequestHead } from './request-head.ts';
import type { RouteRuntime } from './route-runtime.ts';
import { PENDING } from './verdict.ts';

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
    this.#exchanges = {
      log: options.logger,
      admission: new Admission(options.logger),
      released: this.#released,
    };
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
    const start = performance.now();
    const rt = this.#runtime();
    // Reading the head only copies header lines (it cannot throw). The exchange owns the
    // response's one 'close' listener, which ends its in-flight count, whatever happens next.
    const head = readRequestHead(req, rt.keyHeader, rt.jwt !== undefined);
    const exchange = new Exchange(this.#exchanges, req, res, rt, head, start);
    try {
      // A verdict decided before the take is acted on at once; the store answers the exchange.
      const verdict = run(exchange.request, req.method ?? 'GET', req.url ?? '', head);
      if (verdict !== PENDING) exchange.settle(verdict);
    } catch (err) {
      this.#log.error({ err }, 'proxy: unexpected failure');
      sendProblem(res, {
        type: problemTypes.upstreamUnavailable,
        title: 'Bad Gateway',
        status: 502,
        detail: 'The gateway failed to forward the request.',
      });
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
}
