// The floor of any Node gateway: a bare reverse proxy with no limiter, no metrics, no key checks —
// node:http server + undici Pool (keep-alive) streaming both ways, hop-by-hop response headers
// dropped. What the sidecar costs above this is the cost of its features; what this costs above
// the direct call is the cost of a Node proxy hop itself. Env: PORT, UPSTREAM_URL.
import http from 'node:http';
import { Pool, type Dispatcher } from 'undici';

const port = Number(process.env['PORT'] ?? 8095);
const pool = new Pool(process.env['UPSTREAM_URL'] ?? 'http://127.0.0.1:8081', {
  connections: 128,
  keepAliveTimeout: 4000,
});
const hopByHop = new Set(
  'connection keep-alive transfer-encoding te trailer upgrade proxy-connection'.split(' '),
);

const server = http.createServer((req, res) => {
  const headers: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2)
    if (!hopByHop.has((raw[i] as string).toLowerCase()))
      headers.push(raw[i] as string, raw[i + 1] as string);
  const hasBody =
    req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
  pool.dispatch(
    {
      method: req.method as Dispatcher.HttpMethod,
      path: req.url ?? '/',
      headers,
      body: hasBody ? req : null,
    },
    {
      onRequestStart() {},
      onResponseStart(_c, status, h) {
        const out: string[] = [];
        for (const name in h) {
          const v = h[name];
          if (v === undefined || hopByHop.has(name)) continue;
          if (typeof v === 'string') out.push(name, v);
          else for (const x of v) out.push(name, x);
        }
        res.writeHead(status, out);
      },
      onResponseData(_c, chunk) {
        res.write(chunk);
      },
      onResponseEnd() {
        res.end();
      },
      onResponseError() {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      },
    },
  );
});
server.listen(port, '127.0.0.1', () =>
  console.log(JSON.stringify({ msg: 'bare proxy listening', port })),
);
const shutdown = () => server.close(() => process.exit(0));
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
