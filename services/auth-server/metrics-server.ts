// GET /metrics on its own port (AUTH_METRICS_PORT): Prometheus scrapes it inside the cluster while
// the issuer's public port, which users and clients reach, serves nothing of it. One fixed route
// needs no framework. Not listening: main.ts listens.
import http from 'node:http';
import type { Registry } from 'prom-client';

function send(
  res: http.ServerResponse,
  status: number,
  contentType: string,
  body: string,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    ...extra,
  });
  res.end(body);
}

export function buildMetricsServer(registry: Registry): http.Server {
  return http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      send(
        res,
        404,
        'application/problem+json',
        JSON.stringify({
          type: 'about:blank',
          title: 'Not Found',
          status: 404,
          detail: 'This port serves /metrics only.',
        }),
      );
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, 'text/plain; charset=utf-8', 'only GET and HEAD', { allow: 'GET, HEAD' });
      return;
    }
    registry.metrics().then(
      (text) => send(res, 200, registry.contentType, text),
      () => send(res, 503, 'text/plain; charset=utf-8', 'metrics unavailable'),
    );
  });
}
