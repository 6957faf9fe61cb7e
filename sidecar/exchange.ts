// One proxied request from its verdict on: the front door of the admission pipeline (the store's
// TakeSink, pipeline.ts), its dispatch to the upstream (an undici DispatchHandler that streams the
// response into the client's node:http response) and the client's 'close'. proxy.ts reads the
// head and runs the steps; from the verdict on, this object carries the request, so the hot
// path makes no promise, no microtask hop and no closure beyond its close listener.
// Hop-by-hop response headers are dropped, limiter headers added, backpressure kept both ways,
// upstream failures answered as 502/504 problem+json.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Decision } from '../lib/token-bucket/bucket.ts';
import type { Admission } from './admission.ts';
import { dropResponse, removeConnectionTokens } from './hop-by-hop.ts';
import { releaseHeld } from './key-in-flight.ts';
import { AdmissionRequest, type FrontDoor } from './pipeline.ts';
import { problemTypes, sendProblem } from './problem.ts';
import type { RequestHead } from './request-head.ts';
import type { RouteRuntime } from './route-runtime.ts';
import { failedVerdict, takenVerdict } from './take-verdict.ts';
import type { Verdict } from './verdict.ts';

const timeoutCodes = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);
const noHeaders: string[] = [];
const failedToForward = {
  type: problemTypes.upstreamUnavailable,
  title: 'Bad Gateway',
  status: 502,
  detail: 'The gateway failed to forward the request.',
};

/** What every exchange of one proxy shares (made once). */
export interface ExchangeContext {
  readonly log: Logger;
  readonly admission: Admission;
  /** Called once per request, when its client response closes (in-flight accounting). */
  readonly released: () => void;
}

export class Exchange implements FrontDoor, Dispatcher.DispatchHandler {
  /** The request the admission steps act on. */
  readonly request: AdmissionRequest;
  readonly #ctx: ExchangeContext;
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  /** performance.now() when the request reached the proxy, ms. */
  readonly #start: number;
  /** The head as it goes upstream: a flat [name, value, ...] list (hop-by-hop dropped, X-Forwarded-* added). */
  readonly #headers: string[];
  #rateHeaders = noHeaders;
  #outcome: 'forwarded' | 'store_error_allowed' = 'forwarded';
  #controller: Dispatcher.DispatchController | undefined;

  constructor(
    ctx: ExchangeContext,
    req: IncomingMessage,
    res: ServerResponse,
    rt: RouteRuntime,
    head: RequestHead,
    start: number,
  ) {
    this.#ctx = ctx;
    this.#req = req;
    this.#res = res;
    this.#start = start;
    this.#headers = head.forward;
    this.request = new AdmissionRequest(
      ctx.admission,
      rt,
      req.socket,
      this,
      head.hasBody ? req : undefined,
    );
    // 'close' comes once per response: on() spares the wrapper once() would allocate.
    res.on('close', this.#onClose);
  }

  readonly #onClose = (): void => {
    const c = this.#controller;
    if (c !== undefined && !c.aborted && !this.#res.writableFinished)
      c.abort(new Error('client closed the connection'));
    releaseHeld(this.request);
    this.#ctx.released();
  };

  taken(decision: Decision): void {
    this.settle(takenVerdict(this.request, decision));
  }

  failed(err: Error): void {
    this.settle(failedVerdict(this.request, err));
  }

  fault(err: unknown): void {
    this.#ctx.log.error({ err }, 'proxy: unexpected failure');
    sendProblem(this.#res, failedToForward);
  }

  /** Answers a refusal, or forwards the request upstream (as matched: its canonical target). Never throws (a store settles batches). */
  settle(verdict: Verdict): void {
    const res = this.#res;
    try {
      if (verdict.kind !== 'admit') {
        if (verdict.kind !== 'pending') sendProblem(res, verdict.problem, verdict.headers);
        return;
      }
      // The client may have gone while the store decided: nothing to forward then.
      if (res.destroyed) return;
      this.#rateHeaders = verdict.headers;
      this.#outcome = verdict.outcome;
      // The one key header line the upstream reads (request-head.ts forwarded none, nor any look-alike).
      const rt = this.request.rt;
      if (verdict.identity !== undefined)
        this.#headers.push(rt.config.limiter.keyHeader, verdict.identity);
      const req = this.#req;
      rt.metrics.forwardDuration.observe((performance.now() - this.#start) / 1000);
      rt.upstream.dispatch(
        {
          method: req.method as Dispatcher.HttpMethod,
          path: this.request.target,
          headers: this.#headers,
          body: this.request.body ?? null,
        },
        this,
      );
    } catch (err) {
      this.fault(err);
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#res.destroyed) controller.abort(new Error('client closed the connection'));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    if (this.#res.headersSent) {
      // The client was already answered (408 for a stalled request body): drop the upstream's.
      controller.abort(new Error('client already answered'));
      return;
    }
    const out: string[] = [];
    let connection: string | undefined;
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined) continue;
      if (dropResponse.has(name)) {
        if (name === 'connection') connection = Array.isArray(value) ? value.join(', ') : value;
        continue;
      }
      if (typeof value === 'string') out.push(name, value);
      else for (const v of value) out.push(name, v);
    }
    if (connection !== undefined) removeConnectionTokens(out, connection);
    const rate = this.#rateHeaders;
    for (let i = 0; i < rate.length; i++) out.push(rate[i] as string);
    if (statusMessage !== undefined && statusMessage !== '')
      this.#res.writeHead(statusCode, statusMessage, out);
    else this.#res.writeHead(statusCode, out);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.#res.write(chunk)) {
      controller.pause();
      // Made only when the client is slower than the upstream, not for every request.
      this.#res.once('drain', () => controller.resume());
    }
  }

  onResponseEnd(): void {
    this.#res.end();
    const metrics = this.request.rt.metrics;
    metrics.outcome[this.#outcome].inc();
    metrics.proxyDuration.observe((performance.now() - this.#start) / 1000);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const rt = this.request.rt;
    rt.metrics.proxyDuration.observe((performance.now() - this.#start) / 1000);
    if (this.#res.destroyed) return; // the client went away first
    rt.metrics.outcome.upstream_error.inc();
    const code = (err as { code?: string }).code ?? '';
    if (this.#res.headersSent) {
      this.#ctx.log.warn(
        { route: rt.routeId, code, err: err.message },
        'upstream failed mid-response',
      );
      this.#res.destroy(err);
      return;
    }
    if (code === 'UND_ERR_INVALID_ARG') {
      // The request itself cannot be forwarded as sent (the client's fault, not the upstream's).
      this.#ctx.log.debug({ route: rt.routeId, err: err.message }, 'request not forwardable');
      sendProblem(this.#res, {
        type: problemTypes.badRequest,
        title: 'Bad Request',
        status: 400,
        detail: 'The request cannot be forwarded as sent.',
      });
      return;
    }
    const timeout = timeoutCodes.has(code);
    this.#ctx.log.warn(
      { route: rt.routeId, code, err: err.message },
      timeout ? 'upstream timed out' : 'upstream unavailable',
    );
    sendProblem(
      this.#res,
      timeout
        ? {
            type: problemTypes.upstreamTimeout,
            title: 'Gateway Timeout',
            status: 504,
            detail: 'The upstream service did not answer in time.',
          }
        : {
            type: problemTypes.upstreamUnavailable,
            title: 'Bad Gateway',
            status: 502,
            detail: 'The upstream service is unreachable.',
          },
    );
  }
}
