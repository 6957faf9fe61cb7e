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
// Each request is sent at its time whether or not the one before was answered: a slow answer
// must not push the next sends together (that would change what the exact bucket admits).
const send = async (i, sentAtMs) => {
  try {
    const res = await fetch(url, {
      headers: { 'USER-ID': userId, 'Content-Type': 'application/json' },
    });
    const body = await res.text();
    return {
      i,
      sentAtMs,
      status: res.status,
      body,
      headers: Object.fromEntries(names.map((n) => [n, res.headers.get(n)])),
    };
  } catch (err) {
    return { i, sentAtMs, status: 0, body: String(err?.cause ?? err), headers: {} };
  }
};
const pending = [];
const start = performance.now();
for (let i = 0; i < count; i++) {
  const wait = start + i * periodMs - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  pending.push(send(i, performance.now() - start));
}
const results = await Promise.all(pending);
console.log(JSON.stringify({ results }));
