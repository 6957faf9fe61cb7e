// Admin endpoints on their own port: liveness, readiness and Prometheus metrics. Three fixed GET
// routes need no framework; node:http keeps fastify (and its ~0.5 MB of router, validator and
// serializer code) out of every sidecar process, which runs once per pod, so its memory counts.
import http from 'node:http';
import type { Registry } from 'prom-client';
import { sendProblem } from './problem.ts';

export interface AdminDeps {
  readonly registry: Registry;
  /** Readiness: null when ready, otherwise the reason. */
  readonly notReadyReason: () => string | null;
}

const TEXT = 'text/plain; charset=utf-8';

function send(res: http.ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}

/** The admin server (not listening: main.ts listens). */
export function buildAdminServer(deps: AdminDeps): http.Server {
  const routes: Record<string, (res: http.ServerResponse) => Promise<void> | void> = {
    '/healthz': (res) => send(res, 200, TEXT, 'ok'),
    '/readyz': (res) => {
      const reason = deps.notReadyReason();
      if (reason === null) send(res, 200, TEXT, 'ready');
      else send(res, 503, TEXT, `not ready: ${reason}`);
    },
    '/metrics': async (res) =>
      send(res, 200, deps.registry.contentType, await deps.registry.metrics()),
  };
  return http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, (req, res) => {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
    if (route === undefined) {
      sendProblem(res, {
        type: 'about:blank',
        title: 'Not Found',
        status: 404,
        detail: 'The admin port serves /healthz, /readyz and /metrics.',
      });
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendProblem(
        res,
        {
          type: 'about:blank',
          title: 'Method Not Allowed',
          status: 405,
          detail: 'Only GET and HEAD.',
        },
        ['allow', 'GET, HEAD'],
      );
      return;
    }
    Promise.resolve(route(res)).catch(() => send(res, 503, TEXT, 'metrics unavailable'));
  });
}
