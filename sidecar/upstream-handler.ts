// Streams one upstream response (undici dispatch handler) into the client's node:http response:
// hop-by-hop headers dropped, limiter headers added, backpressure both ways, upstream failures as
// 502/504 problem+json.
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { dropResponse, removeConnectionTokens } from './hop-by-hop.ts';
import { problemTypes, sendProblem } from './problem.ts';
import type { RouteRuntime } from './route-runtime.ts';

const timeoutCodes = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);

/** Streams one upstream response into the client response, with backpressure both ways. */
export class UpstreamHandler implements Dispatcher.DispatchHandler {
  readonly #res: ServerResponse;
  readonly #rt: RouteRuntime;
  readonly #rateHeaders: string[];
  readonly #start: number;
  readonly #outcome: 'forwarded' | 'store_error_allowed';
  readonly #log: Logger;
  #controller: Dispatcher.DispatchController | undefined;

  constructor(res: ServerResponse, rt: RouteRuntime, rateHeaders: string[], start: number, outcome: 'forwarded' | 'store_error_allowed', log: Logger) {
    this.#res = res;
    this.#rt = rt;
    this.#rateHeaders = rateHeaders;
    this.#start = start;
    this.#outcome = outcome;
    this.#log = log;
    // 'close' comes once per response: on() spares the wrapper once() would allocate.
    res.on('close', this.#onClientClose);
  }

  readonly #onClientClose = (): void => {
    if (!this.#res.writableFinished && this.#controller !== undefined && !this.#controller.aborted) {
      this.#controller.abort(new Error('client closed the connection'));
    }
  };

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
    for (let i = 0; i < this.#rateHeaders.length; i++) out.push(this.#rateHeaders[i] as string);
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
      this.#log.warn({ route: this.#rt.routeId, code, err: err.message }, 'upstream failed mid-response');
      this.#res.destroy(err);
      return;
    }
    if (code === 'UND_ERR_INVALID_ARG') {
      // The request itself cannot be forwarded as sent (the client's fault, not the upstream's).
      this.#log.debug({ route: this.#rt.routeId, err: err.message }, 'request not forwardable');
      sendProblem(this.#res, { type: problemTypes.badRequest, title: 'Bad Request', status: 400, detail: 'The request cannot be forwarded as sent.' });
      return;
    }
    const timeout = timeoutCodes.has(code);
    this.#log.warn({ route: this.#rt.routeId, code, err: err.message }, timeout ? 'upstream timed out' : 'upstream unavailable');
    sendProblem(this.#res, timeout
      ? { type: problemTypes.upstreamTimeout, title: 'Gateway Timeout', status: 504, detail: 'The upstream service did not answer in time.' }
      : { type: problemTypes.upstreamUnavailable, title: 'Bad Gateway', status: 502, detail: 'The upstream service is unreachable.' });
  }
}
