/* global PARAMS */
// Runs inside the cluster; PARAMS: { url, userId, total, concurrency }. Sends `total` GETs for one
// USER-ID from `concurrency` parallel loops (each its own connection pool, so kube-proxy spreads
// them over the Service's pods) and prints the status counts and the burst's duration.
import { Agent, fetch } from 'undici';
const { url, userId, total, concurrency } = PARAMS;
const counts = {};
let next = 0;
const start = performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    const dispatcher = new Agent({ connections: 1 });
    while (next < total) {
      next++;
      try {
        const res = await fetch(url, { headers: { 'USER-ID': userId }, dispatcher });
        await res.arrayBuffer();
        counts[res.status] = (counts[res.status] ?? 0) + 1;
      } catch {
        counts.error = (counts.error ?? 0) + 1;
      }
    }
    await dispatcher.close();
  }),
);
console.log(JSON.stringify({ counts, elapsedMs: performance.now() - start }));
