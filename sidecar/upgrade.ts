// HTTP/1.1 Upgrade (WebSocket and the like) through the sidecar: the node:http server's 'upgrade'
// event. The request is admitted by the same pipeline as a plain one (sidecar/pipeline.ts: route
// match, key, one take from the bucket, onStoreError), refusals are problem+json written to the
// raw socket; an admitted one opens its own connection to the upstream (node:http, not the
// keep-alive pool: the connection becomes the tunnel) with Upgrade/Connection kept and
// X-Forwarded-* added. On the upstream's 101 the response head goes to the client and the two
// sockets are piped; an error or close on either side destroys the other, so no socket outlives
// its tunnel.
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import { proxyUpstream } from '../lib/config/sidecar.ts';
import { Admission } from './admission.ts';
import { AwaitedAdmission } from './awaited-admission.ts';
import { problemTypes, writeSocketProblem } from './problem.ts';
import { readRequestHead } from './request-head.ts';
import type { RouteRuntime } from './route-runtime.ts';

/** After one side of a tunnel ended, the longest wait for the other to close (ms). */
const END_GRACE_MS = 5000;

export interface UpgradeProxyOptions {
  readonly logger: Logger;
  /** The runtime a new request uses (swapped by reloads). */
  readonly runtime: () => RouteRuntime;
  /** Registry for the open-tunnel gauge (the sidecar's /metrics). */
  readonly registry?: Registry;
}

export class UpgradeProxy {
  readonly #log: Logger;
  readonly #runtime: () => RouteRuntime;
  readonly #admission: Admission;
  /** Every socket of an upgrade in progress or an open tunnel, client and upstream side. */
  readonly #sockets = new Set<Duplex>();
  #tunnels = 0;

  constructor(options: UpgradeProxyOptions) {
    this.#log = options.logger;
    this.#runtime = options.runtime;
    this.#admission = new Admission(options.logger);
    if (options.registry !== undefined) {
      const tunnels = () => this.#tunnels;
      new Gauge({
        name: 'portcullis_sidecar_upgrade_tunnels',
        help: 'Open upgraded connections (e.g. WebSocket) between a client and the upstream',
        registers: [options.registry],
        collect() {
          this.set(tunnels());
        },
      });
    }
  }

  /** Open tunnels (after the upstream's 101, until either side closes). */
  get tunnels(): number {
    return this.#tunnels;
  }

  /** Sockets held: client and upstream, of upgrades in progress and open tunnels. */
  get sockets(): number {
    return this.#sockets.size;
  }

  /** Destroys every tunnel and pending upgrade (shutdown: a tunnel has no natural end). */
  closeAll(): void {
    for (const s of this.#sockets) s.destroy();
  }

  readonly handle = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    this.#track(socket);
    socket.on('error', (err) =>
      this.#log.debug({ err: err.message }, 'upgrade: client socket error'),
    );
    this.#handle(req, socket, head).catch((err: unknown) => {
      this.#log.error({ err }, 'upgrade: unexpected failure');
      writeSocketProblem(socket, {
        type: problemTypes.upstreamUnavailable,
        title: 'Bad Gateway',
        status: 502,
        detail: 'The gateway failed to forward the upgrade.',
      });
    });
  };

  #track(socket: Duplex): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  }

  async #handle(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const rt = this.#runtime();
    const requestHead = readRequestHead(req, rt.keyHeader, rt.jwt !== undefined);
    // One take per upgrade, like one request: the tunnel's messages are not metered.
    const admission = new AwaitedAdmission(this.#admission, rt, req.socket);
    const verdict = await admission.admit(req.method ?? 'GET', req.url ?? '', requestHead);
    if (verdict.kind !== 'admit') {
      if (verdict.kind !== 'pending') writeSocketProblem(socket, verdict.problem, verdict.headers);
      return;
    }
    // Forwarded as matched (#forward sends req.url), like a plain request.
    req.url = admission.request.target;
    const forward = requestHead.forward;
    // This hop passes the Upgrade on: the one hop-by-hop header pair an upgrade keeps.
    forward.push('connection', 'Upgrade', 'upgrade', requestHead.upgrade ?? '');
    // The one key header line the upstream reads (request-head.ts forwarded none, nor any look-alike).
    if (verdict.identity !== undefined) forward.push(rt.config.limiter.keyHeader, verdict.identity);
    // The client may have gone while the store decided.
    if (socket.destroyed) return;
    this.#forward(req, socket, head, rt, forward, verdict.headers, verdict.outcome);
  }

  #forward(
    req: http.IncomingMessage,
    socket: Duplex,
    head: Buffer,
    rt: RouteRuntime,
    headers: string[],
    rateHeaders: string[],
    outcome: 'forwarded' | 'store_error_allowed',
  ): void {
    const upstream = proxyUpstream(rt.config);
    const target = new URL(upstream.url);
    const client = target.protocol === 'https:' ? https : http;
    const upstreamReq = client.request({
      protocol: target.protocol,
      hostname: target.hostname.replace(/^\[|\]$/g, ''),
      port: target.port === '' ? undefined : Number(target.port),
      method: req.method,
      path: req.url,
      headers,
      agent: false, // the connection becomes the tunnel: never pooled
      setHost: false,
    });
    let settled = false;
    // No 101 (or other answer) within upstream.timeoutMs: 504. The connect timeout counts in it.
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      rt.metrics.outcome.upstream_error.inc();
      upstreamReq.destroy();
      writeSocketProblem(socket, {
        type: problemTypes.upstreamTimeout,
        title: 'Gateway Timeout',
        status: 504,
        detail: 'The upstream did not answer the upgrade in time.',
      });
    }, upstream.timeoutMs);
    timer.unref();
    // A client leaving (or half-closing) before the upstream answered takes the pending upstream
    // request with it.
    const onClientGone = () => {
      clearTimeout(timer);
      settled = true; // nobody to answer: not an upstream error
      upstreamReq.destroy();
      socket.destroy();
    };
    const stopWatchingClient = () => {
      socket.off('close', onClientGone);
      socket.off('end', onClientGone);
    };
    socket.once('close', onClientGone);
    socket.once('end', onClientGone);
    upstreamReq.on('socket', (s) => this.#track(s));

    upstreamReq.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (settled) return;
      settled = true;
      rt.metrics.outcome.upstream_error.inc();
      this.#log.warn(
        { route: rt.routeId, err: err.message, code: err.code },
        'upgrade: upstream unavailable',
      );
      writeSocketProblem(socket, {
        type: problemTypes.upstreamUnavailable,
        title: 'Bad Gateway',
        status: 502,
        detail: 'The upstream service is unavailable.',
      });
    });

    // The upstream declined the upgrade (e.g. 400, 403, 426): relay its answer and close.
    upstreamReq.on('response', (res) => {
      clearTimeout(timer);
      if (settled) {
        res.destroy(); // too late: the client already has its 504
        return;
      }
      settled = true;
      stopWatchingClient();
      rt.metrics.outcome.forwarded.inc();
      let headText = `HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}\r\n`;
      const raw = res.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) {
        const lower = (raw[i] as string).toLowerCase();
        if (
          lower === 'connection' ||
          lower === 'keep-alive' ||
          lower === 'transfer-encoding' ||
          lower === 'upgrade'
        )
          continue;
        headText += `${raw[i]}: ${raw[i + 1]}\r\n`;
      }
      for (let i = 0; i < rateHeaders.length; i += 2)
        headText += `${rateHeaders[i]}: ${rateHeaders[i + 1]}\r\n`;
      // Without a length the body runs to the close (which this answer ends with anyway).
      socket.write(`${headText}connection: close\r\n\r\n`);
      res.pipe(socket);
      res.on('error', () => socket.destroy());
      socket.once('close', () => res.destroy());
    });

    upstreamReq.on('upgrade', (res, upstream: Duplex, upstreamHead: Buffer) => {
      clearTimeout(timer);
      stopWatchingClient();
      if (settled || socket.destroyed) {
        upstream.destroy();
        return;
      }
      settled = true;
      rt.metrics.outcome[outcome].inc();
      this.#tunnel(socket, head, res, upstream, upstreamHead, rateHeaders);
    });
    upstreamReq.end();
  }

  #tunnel(
    socket: Duplex,
    head: Buffer,
    res: http.IncomingMessage,
    upstream: Duplex,
    upstreamHead: Buffer,
    rateHeaders: string[],
  ): void {
    this.#tunnels++;
    let open = true;
    const close = () => {
      if (!open) return;
      open = false;
      this.#tunnels--;
      socket.destroy();
      upstream.destroy();
    };
    // Either side failing or closing ends the tunnel. An end (FIN) is passed on by pipe() so a
    // close handshake completes; if the other side has not closed within END_GRACE_MS after that,
    // the tunnel is torn down anyway: half-open tunnels would leak.
    let endTimer: NodeJS.Timeout | undefined;
    const onEnd = () => {
      endTimer ??= setTimeout(close, END_GRACE_MS).unref();
    };
    for (const s of [socket, upstream]) {
      s.on('error', close);
      s.on('close', () => {
        clearTimeout(endTimer);
        close();
      });
      s.on('end', onEnd);
    }
    for (const s of [socket, upstream]) {
      if ('setNoDelay' in s && typeof s.setNoDelay === 'function') s.setNoDelay(true);
      if ('setTimeout' in s && typeof s.setTimeout === 'function') s.setTimeout(0);
    }
    // The 101 head as the upstream sent it (Upgrade, Connection, Sec-WebSocket-Accept, ...), plus
    // the limiter headers of this admission.
    let headText = `HTTP/1.1 101 ${res.statusMessage ?? 'Switching Protocols'}\r\n`;
    const raw = res.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) headText += `${raw[i]}: ${raw[i + 1]}\r\n`;
    for (let i = 0; i < rateHeaders.length; i += 2)
      headText += `${rateHeaders[i]}: ${rateHeaders[i + 1]}\r\n`;
    socket.write(`${headText}\r\n`);
    if (upstreamHead.length > 0) socket.write(upstreamHead);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  }
}
