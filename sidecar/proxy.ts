// The hot path: a node:http request handler that hands each request to an Exchange
// (sidecar/exchange.ts), which runs the admission pipeline (sidecar/pipeline.ts) on its head and
// streams the request to the upstream through an undici Pool (keep-alive) and the response back. Hop-by-hop headers are dropped both ways
// (RFC 9110 section 7.6.1, sidecar/request-head.ts for the request); X-Forwarded-* are added.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { Admission } from './admission.ts';
import { Exchange, type ExchangeContext } from './exchange.ts';
import { KeyInFlight } from './key-in-flight.ts';
import { problemTypes, sendProblem } from './problem.ts';
import type { RouteRuntime } from './route-runtime.ts';

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
      keys: new KeyInFlight(),
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
    const rt = this.#runtime();
    // The exchange owns the response's one 'close' listener, which ends its in-flight count.
    const exchange = new Exchange(this.#exchanges, req, res, rt, performance.now());
    try {
      exchange.start();
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
