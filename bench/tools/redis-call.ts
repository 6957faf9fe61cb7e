// What one Redis script call costs the sidecar's process: bytes allocated on the JavaScript heap
// and CPU per call of the Redis store (lib/token-bucket/redis-store.ts), one take per call, calls
// one after another, against the floor of any client: the same EVALSHA written to a plain socket
// and its reply read back. At light load every take is its own call (docs/capacity.md), so this is
// the store's share of a request there; in the gateway's own runs it hides behind how many takes
// share a call, which moves with the machine's timing.
// Bytes: the young generation is made large enough (64 MiB) that no GC runs while 2,000 calls are
// made, so the heap's growth over them is what they allocated, garbage included (7 rounds, median).
// CPU: user + system time of this process over 10,000 calls (5 rounds, median).
// To compare two revisions, run it in a worktree of each: `node bench/tools/redis-call.ts`.
// Prints a Markdown table; writes nothing to bench/results (quote it in docs/performance.md).
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import v8 from 'node:v8';
import { Redis } from 'ioredis';
import { bucketTtlMs, type BucketRule, type Decision } from '../../lib/token-bucket/bucket.ts';
import { RedisBucketStore } from '../../lib/token-bucket/redis-store.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { median } from '../gateway.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  // Re-run with a collector that can be called and a young generation no round fills.
  const child = spawnSync(process.execPath, ['--expose-gc', '--min-semi-space-size=64', '--max-semi-space-size=64', fileURLToPath(import.meta.url)], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}

const rule: BucketRule = { replenishRate: 1_000_000, burstCapacity: 1_000_000, requestedTokens: 1 };

const redis = await startRedis();
const store = new RedisBucketStore({ url: redis.url, commandTimeoutMs: 1000 });
await store.ready();
const rules = [rule];
const costs = [1];
const viaStore = (): Promise<Decision> => new Promise((resolve, reject) => store.takeAllInto('one-user', rules, costs, { taken: resolve, failed: reject }));

// The floor: the store's own call for the same take, written by hand to a plain socket.
const admin = new Redis(redis.url);
const sha = (await admin.script('LOAD', readFileSync(new URL('../../lib/token-bucket/token-bucket.lua', import.meta.url), 'utf8'))) as string;
const socket = net.connect(redis.port, '127.0.0.1');
await new Promise((resolve) => socket.once('connect', resolve));
socket.setNoDelay(true);
socket.setEncoding('utf8');
let waiting: ((reply: string) => void) | undefined;
let buffered = '';
socket.on('data', (chunk: string) => {
  buffered += chunk;
  // One bulk string: $<length>\r\n<bytes>\r\n (the script's replies are ASCII).
  const lineEnd = buffered.indexOf('\r\n');
  if (lineEnd < 0) return;
  const length = Number(buffered.slice(1, lineEnd));
  if (buffered.length < lineEnd + 4 + length) return;
  const reply = buffered.slice(lineEnd + 2, lineEnd + 2 + length);
  buffered = buffered.slice(lineEnd + 4 + length);
  const w = waiting;
  waiting = undefined;
  w?.(reply);
});
const args = ['EVALSHA', sha, '1', store.keyOf('one-user'), '', '1', '1', String(rule.replenishRate), String(rule.burstCapacity), '1', String(bucketTtlMs(rule))];
const viaSocket = (): Promise<string> =>
  new Promise((resolve) => {
    waiting = resolve;
    let out = `*${args.length}\r\n`;
    for (const a of args) out += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
    socket.write(out);
  });

const results: { name: string; bytes: number; cpuUs: number }[] = [];
for (const [name, call] of [['Redis store (take, one per call)', viaStore], ['plain socket, the same EVALSHA (floor)', viaSocket]] as const) {
  for (let i = 0; i < 3000; i++) await call(); // V8 compiles by use
  const bytes: number[] = [];
  for (let round = 0; round < 7; round++) {
    gc();
    const before = v8.getHeapStatistics().used_heap_size;
    for (let i = 0; i < 2000; i++) await call();
    bytes.push((v8.getHeapStatistics().used_heap_size - before) / 2000);
  }
  const cpu: number[] = [];
  for (let round = 0; round < 5; round++) {
    const before = process.cpuUsage();
    for (let i = 0; i < 10_000; i++) await call();
    const used = process.cpuUsage(before);
    cpu.push((used.user + used.system) / 10_000);
  }
  results.push({ name, bytes: Math.round(median(bytes)), cpuUs: Math.round(median(cpu) * 10) / 10 });
}
await store.close();
admin.disconnect();
socket.destroy();
await redis.stop();

console.log(
  [
    `One Redis script call, one take, calls one after another; ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), Node ${process.version}; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} at the end.`,
    '',
    '| caller | bytes allocated per call (median of 7 rounds of 2,000) | CPU µs per call (median of 5 rounds of 10,000) |',
    '|---|---:|---:|',
    ...results.map((r) => `| ${r.name} | ${r.bytes} | ${r.cpuUs} |`),
  ].join('\n'),
);
