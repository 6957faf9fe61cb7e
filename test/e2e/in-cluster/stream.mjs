/* global PARAMS */
// Runs inside the cluster; PARAMS: { url, perSecond, stopFile, maxMs }. A steady client: one GET
// every 1000/perSecond ms (keep-alive connections, as real clients use) until stopFile exists or
// maxMs passed. Every answer other than 200, and every connection error, is a failure. Prints
// the totals and each failure (time from start, status or error).
import { existsSync } from 'node:fs';
const { url, perSecond, stopFile, maxMs } = PARAMS;
const period = 1000 / perSecond;
const failures = [];
let sent = 0;
let ok = 0;
const inFlight = new Set();
const start = performance.now();
for (let i = 0; ; i++) {
  const at = start + i * period;
  const wait = at - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  if (existsSync(stopFile) || performance.now() - start > maxMs) break;
  sent++;
  const t = performance.now() - start;
  const p = fetch(url, { headers: { 'USER-ID': `stream-${i % 50}` } })
    .then(async (res) => {
      const body = await res.text();
      if (res.status === 200) ok++;
      else failures.push({ atMs: Math.round(t), status: res.status, body: body.slice(0, 200) });
    })
    .catch((err) =>
      failures.push({ atMs: Math.round(t), error: String(err?.cause?.code ?? err?.cause ?? err) }),
    )
    .finally(() => inFlight.delete(p));
  inFlight.add(p);
}
await Promise.all(inFlight);
console.log(JSON.stringify({ sent, ok, failures, elapsedMs: performance.now() - start }));
