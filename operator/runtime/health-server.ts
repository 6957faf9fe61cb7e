// /healthz (the process and its event loop answer), /readyz (caches synced: safe to route to or
// to count on), /metrics (Prometheus text). Plain node:http: three fixed routes need no framework.
import http from 'node:http';
import type { Registry } from 'prom-client';

export interface HealthServerOptions {
  registry: Registry;
  ready: () => boolean;
  /** Extra detail for /readyz (e.g. "leader" or "standby"). */
  describe?: () => string;
}

export function createHealthServer(options: HealthServerOptions): http.Server {
  return http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res
        .writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' })
        .end('method not allowed\n');
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const ready = options.ready();
      const detail = options.describe?.() ?? '';
      res
        .writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' })
        .end(`${ready ? 'ok' : 'not ready'}${detail === '' ? '' : ` (${detail})`}\n`);
    } else if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': options.registry.contentType }).end(text),
        () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
      );
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
}
