// One proxied request once its head was read: its take from the bucket (a TakeSink), its dispatch
// to the upstream (an undici DispatchHandler that streams the response into the client's
// node:http response) and the client's 'close'. One object per request carries all three, so the
// hot path makes no promise, no microtask hop and no closure beyond this object's close listener.
// Hop-by-hop response headers are dropped, limiter headers added, backpressure kept both ways,
// upstream failures answered as 502/504 problem+json.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { unlimited, type Admission, type Verdict } from './admission.ts';
import type { Decision } from '../lib/token-bucket/bucket.ts';
import { dropResponse, removeConnectionTokens } from './hop-by-hop.ts';
import { problemTypes, sendProblem } from './problem.ts';
import type { RouteRuntime, RuleRuntime } from './route-runtime.ts';
import type { TakeSink } from '../lib/token-bucket/bucket-store.ts';
import type { KeyInFlight } from './key-in-flight.ts';

const timeoutCodes = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);
const noHeaders: string[] = [];

/** What every exchange of one proxy shares (made once). */
export interface ExchangeContext {
  readonly log: Logger;
  readonly admission: Admission;
  /** Called once per request, when its client response closes (in-flight accounting). */
  readonly released: () => void;
  /** Requests in flight per key (maxInFlightPerKey). */
  readonly keys: KeyInFlight;
}

export class Exchange implements TakeSink, Dispatcher.DispatchHandler {
  readonly #ctx: ExchangeContext;
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  readonly #rt: RouteRuntime;
  /** performance.now() when the request reached the proxy, ms. */
  readonly #start: number;
  /** The head as it goes upstream: a flat [name, value, ...] list (hop-by-hop dropped, X-Forwarded-* added). */
  #headers = noHeaders;
  #hasBody = false;
  #storeStart = 0;
  #rule: RuleRuntime | undefined;
  #rateHeaders = noHeaders;
  #outcome: 'forwarded' | 'store_error_allowed' = 'forwarded';
  #controller: Dispatcher.DispatchController | undefined;
  /** The key this request counts against in ctx.keys, until its response closes. */
  #heldKey: string | undefined;

  constructor(ctx: ExchangeContext, req: IncomingMessage, res: ServerResponse, rt: RouteRuntime, start: number) {
    this.#ctx = ctx;
    this.#req = req;
    this.#res = res;
    this.#rt = rt;
    this.#start = start;
    // 'close' comes once per response: on() spares the wrapper once() would allocate.
    res.on('close', this.#onClose);
  }

  readonly #onClose = (): void => {
    const c = this.#controller;
    if (c !== undefined && !c.aborted && !this.#res.writableFinished) c.abort(new Error('client closed the connection'));
    this.#releaseKey();
    this.#ctx.released();
  };

  readonly #releaseKey = (): void => {
    const key = this.#heldKey;
    if (key === undefined) return;
    this.#heldKey = undefined;
    this.#ctx.keys.release(key);
  };

  /**
   * A request with a body counts against its key's in-flight bound until the body has arrived or
   * its response closed (refused with 429 past it, before any charge); then the take from the
   * rule's buckets, forwarding following in taken() or failed(). Bodiless requests are not
   * counted: they hold a connection only as long as the upstream takes, and a burst of them is
   * the token bucket's to judge.
   */
  ask(rule: RuleRuntime, key: string, headers: string[], hasBody: boolean): void {
    const max = this.#rt.maxInFlightPerKey;
    if (max > 0 && hasBody && !this.#req.complete) {
      if (!this.#ctx.keys.acquire(key, max)) {
        this.#settle(this.#ctx.admission.keyBusy(this.#rt, max));
        return;
      }
      this.#heldKey = key;
      this.#req.once('end', this.#releaseKey);
    }
    this.#headers = headers;
    this.#hasBody = hasBody;
    this.#rule = rule;
    this.#storeStart = performance.now();
    this.#ctx.admission.overload.started(this.#req.socket);
    this.#rt.store.take(rule.bucketPrefix + key, rule.limits, rule.costs, this);
  }

  /** Forwards without asking the limiter (no rule applies to the request). */
  forwardUnlimited(headers: string[], hasBody: boolean): void {
    this.#headers = headers;
    this.#hasBody = hasBody;
    this.#settle(unlimited);
  }

  taken(decision: Decision): void {
    this.#ctx.admission.overload.settled(this.#req.socket);
    this.#settle(this.#ctx.admission.decided(this.#rt, this.#rule as RuleRuntime, decision, this.#storeStart));
  }

  failed(err: Error): void {
    this.#ctx.admission.overload.settled(this.#req.socket);
    this.#settle(this.#ctx.admission.storeFailed(this.#rt, err));
  }

  /** Answers a refusal, or forwards the request upstream. Never throws (a store settles batches). */
  #settle(verdict: Verdict): void {
    const res = this.#res;
    try {
      if (!verdict.admitted) {
        sendProblem(res, verdict.problem, verdict.headers);
        return;
      }
      // The client may have gone while the store decided: nothing to forward then.
      if (res.destroyed) return;
      this.#rateHeaders = verdict.rateHeaders;
      this.#outcome = verdict.outcome;
      const req = this.#req;
      this.#rt.metrics.forwardDuration.observe((performance.now() - this.#start) / 1000);
      this.#rt.upstream.dispatch(
        { method: req.method as Dispatcher.HttpMethod, path: req.url as string, headers: this.#headers, body: this.#hasBody ? req : null },
        this,
      );
    } catch (err) {
      this.#ctx.log.error({ err }, 'proxy: unexpected failure');
      sendProblem(res, { type: problemTypes.upstreamUnavailable, title: 'Bad Gateway', status: 502, detail: 'The gateway failed to forward the request.' });
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#res.destroyed) controller.abort(new Error('client closed the connection'));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, statusMessage?: string): void {
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
    if (statusMessage !== undefined && statusMessage !== '') this.#res.writeHead(statusCode, statusMessage, out);
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
    this.#rt.metrics.outcome[this.#outcome].inc();
    this.#rt.metrics.proxyDuration.observe((performance.now() - this.#start) / 1000);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.#rt.metrics.proxyDuration.observe((performance.now() - this.#start) / 1000);
    if (this.#res.destroyed) return; // the client went away first
    this.#rt.metrics.outcome.upstream_error.inc();
    const code = (err as { code?: string }).code ?? '';
    if (this.#res.headersSent) {
      this.#ctx.log.warn({ route: this.#rt.routeId, code, err: err.message }, 'upstream failed mid-response');
      this.#res.destroy(err);
      return;
    }
    if (code === 'UND_ERR_INVALID_ARG') {
      // The request itself cannot be forwarded as sent (the client's fault, not the upstream's).
      this.#ctx.log.debug({ route: this.#rt.routeId, err: err.message }, 'request not forwardable');
      sendProblem(this.#res, { type: problemTypes.badRequest, title: 'Bad Request', status: 400, detail: 'The request cannot be forwarded as sent.' });
      return;
    }
    const timeout = timeoutCodes.has(code);
    this.#ctx.log.warn({ route: this.#rt.routeId, code, err: err.message }, timeout ? 'upstream timed out' : 'upstream unavailable');
    sendProblem(this.#res, timeout
      ? { type: problemTypes.upstreamTimeout, title: 'Gateway Timeout', status: 504, detail: 'The upstream service did not answer in time.' }
      : { type: problemTypes.upstreamUnavailable, title: 'Bad Gateway', status: 502, detail: 'The upstream service is unreachable.' });
  }
}
