/* global PARAMS */
// Runs inside the cluster (a client pod, node from the project's image), fed on stdin after a
// `const PARAMS = {...}` line: { url, userId, count, periodMs }. Sends `count` GETs on a fixed
// schedule (one every periodMs from the first, not after each answer) and prints one JSON line:
// each request's send time (ms from the first), status, body and the limiter headers.
const { url, userId, count, periodMs } = PARAMS;
const names = [
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'ratelimit-used',
  'ratelimit-policy',
  'ratelimit',
  'retry-after',
  'content-type',
];
const results = [];
const start = performance.now();
for (let i = 0; i < count; i++) {
  const wait = start + i * periodMs - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const sentAtMs = performance.now() - start;
  try {
    const res = await fetch(url, {
      headers: { 'USER-ID': userId, 'Content-Type': 'application/json' },
    });
    const body = await res.text();
    results.push({
      i,
      sentAtMs,
      status: res.status,
      body,
      headers: Object.fromEntries(names.map((n) => [n, res.headers.get(n)])),
    });
  } catch (err) {
    results.push({ i, sentAtMs, status: 0, body: String(err?.cause ?? err), headers: {} });
  }
}
console.log(JSON.stringify({ results }));
