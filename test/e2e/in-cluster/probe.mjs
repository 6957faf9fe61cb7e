/* global PARAMS */
// Runs inside the cluster; PARAMS: { url, periodMs, stopFile, maxMs }. One GET every periodMs,
// each with a USER-ID of its own (a fresh bucket, so limiting never refuses it), until stopFile
// exists or maxMs passed. Prints, per request, the wall-clock time it was sent (epoch ms), the
// status, and whether the limiter's headers came back (they do only when the store answered).
import { existsSync } from 'node:fs';
const { url, periodMs, stopFile, maxMs } = PARAMS;
const results = [];
const start = performance.now();
for (let i = 0; !existsSync(stopFile) && performance.now() - start < maxMs; i++) {
  const wait = start + i * periodMs - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const at = Date.now();
  try {
    const res = await fetch(url, { headers: { 'USER-ID': `probe-${at}-${i}` } });
    await res.arrayBuffer();
    results.push({
      at,
      status: res.status,
      limited: res.headers.get('ratelimit-remaining') !== null,
    });
  } catch (err) {
    results.push({ at, status: 0, limited: false, error: String(err?.cause?.code ?? err) });
  }
}
console.log(JSON.stringify({ results }));
