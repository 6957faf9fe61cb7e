/* global PARAMS */
// Runs inside the cluster; PARAMS: { url, userId, total, concurrency }. Sends `total` GETs for one
// USER-ID from `concurrency` parallel loops (each on its own keep-alive connection, so kube-proxy
// spreads them over the Service's pods) and prints the status counts and the burst's duration.
// node:http only: the client pod runs the user-service image, which carries no node_modules.
import http from 'node:http';
const { url, userId, total, concurrency } = PARAMS;
const counts = {};
let next = 0;
const start = performance.now();

/** One GET on `agent`'s connection: its status after the body was read. */
function get(agent) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers: { 'USER-ID': userId } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

await Promise.all(
  Array.from({ length: concurrency }, async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    while (next < total) {
      next++;
      try {
        const status = await get(agent);
        counts[status] = (counts[status] ?? 0) + 1;
      } catch {
        counts.error = (counts.error ?? 0) + 1;
      }
    }
    agent.destroy();
  }),
);
console.log(JSON.stringify({ counts, elapsedMs: performance.now() - start }));
