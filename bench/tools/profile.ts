// Where the sidecar's CPU goes: runs the user service, Redis and a sidecar (Redis store, a limit
// nobody reaches) under `node --cpu-prof`, drives it at saturation with wrk for BENCH_DURATION_S
// (10 s) after a warm-up, then folds the V8 profile by owner (Node core, undici, ioredis,
// prom-client, the sidecar's own files; native frames such as write syscalls are charged to the JS
// frame that called them) and lists the heaviest functions. `node bench/tools/profile.ts [memory]`
// writes bench/results/profile-sidecar[-memory].json and .md.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../test/harness/ports.ts';
import { startProgram, startSidecar } from '../../test/harness/programs.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { cpuUs } from '../gateway.ts';
import { ensureWrk, runWrk } from '../gateway-wrk.ts';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The owner of a script URL: an npm package, a node: module group, or the repository folder. */
function owner(url: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg !== null) return pkg[1] as string;
  if (url.startsWith('node:')) return 'node core';
  if (url.includes('/sidecar/')) return 'sidecar (Portcullis)';
  return url === '' ? '(native)' : 'other';
}

export function foldProfile(p: CpuProfile): { byOwner: Record<string, number>; top: { fn: string; selfPct: number }[]; busyMs: number } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const ownerMs = new Map<string, number>();
  const selfMs = new Map<string, number>();
  let busy = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const ms = (p.timeDeltas[i] ?? 0) / 1000;
    const node = byId.get(p.samples[i] as number);
    if (node === undefined) continue;
    const name = node.callFrame.functionName;
    if (name === '(idle)') continue;
    busy += ms;
    let label: string;
    if (name === '(garbage collector)') label = 'garbage collector';
    else if (name === '(program)') label = '(program: V8/libuv outside JS)';
    else {
      // A native frame (writev, writeLatin1String, ...) is charged to its nearest caller outside
      // Node core: who asked for the write (undici's request, ioredis' batch, the sidecar's res.end).
      let id: number | undefined = node.callFrame.url === '' ? node.id : undefined;
      let who = owner(node.callFrame.url);
      if (id !== undefined) who = 'node core';
      while (id !== undefined) {
        const o = owner(byId.get(id)?.callFrame.url ?? '');
        if (o !== 'node core' && o !== '(native)') {
          who = o;
          break;
        }
        id = parent.get(id);
      }
      label = who + (node.callFrame.url === '' ? ` [native ${name}]` : '');
    }
    ownerMs.set(label, (ownerMs.get(label) ?? 0) + ms);
    const fn = `${name || '(anonymous)'} ${node.callFrame.url.split('/').slice(-2).join('/')}:${node.callFrame.lineNumber + 1}`;
    selfMs.set(fn, (selfMs.get(fn) ?? 0) + ms);
  }
  const pct = (x: number) => Math.round((1000 * x) / Math.max(1e-9, busy)) / 10;
  return {
    byOwner: Object.fromEntries([...ownerMs].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, pct(v)])),
    top: [...selfMs].sort((a, b) => b[1] - a[1]).slice(0, 20).map(([fn, v]) => ({ fn, selfPct: pct(v) })),
    busyMs: Math.round(busy),
  };
}

export async function profileSidecar(store: 'redis' | 'memory', log: (line: string) => void = console.log) {
  ensureWrk();
  const durationS = Number(process.env['BENCH_DURATION_S'] ?? 10);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-profile-'));
  const redis = store === 'redis' ? await startRedis() : undefined;
  const userPort = await freePort();
  const user = await startProgram({ entry: 'services/user-service/main.ts', env: { PORT: String(userPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }, waitPort: userPort, name: 'profile-user-service' });
  const sidecar = await startSidecar(
    {
      upstream: { url: `http://127.0.0.1:${userPort}` },
      route: { id: 'bench', path: '/**' },
      limiter: { replenishRate: 1_000_000_000, burstCapacity: 1_000_000_000, requestedTokens: 1 },
      ...(redis !== undefined ? { redis: { url: redis.url, commandTimeoutMs: 1000 } } : {}),
      logLevel: 'warn',
    },
    { name: 'profile-sidecar', env: { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}` } },
  );
  const url = `${sidecar.url}/healthcheck/ready`;
  const headers = { 'USER-ID': 'bench-user' };
  let result;
  try {
    await runWrk({ url, connections: 50, threads: 1, durationS: 3, headers });
    const before = cpuUs(sidecar.program.child.pid);
    const wrk = await runWrk({ url, connections: 50, threads: 1, durationS, headers });
    const cpuUsPerRequest = Math.round(((cpuUs(sidecar.program.child.pid) - before) / wrk.requests) * 10) / 10;
    log(`  ${store}: ${Math.round(wrk.requests / (wrk.durationUs / 1e6))} req/s, ${cpuUsPerRequest} µs CPU/request`);
    await sidecar.program.stop('SIGINT');
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error('no .cpuprofile written');
    const folded = foldProfile(JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as CpuProfile);
    result = {
      suite: 'profile',
      store,
      startedAt: new Date().toISOString(),
      loadavg: os.loadavg(),
      requestsPerSecond: Math.round(wrk.requests / (wrk.durationUs / 1e6)),
      cpuUsPerRequest,
      note: 'Percentages of the sidecar main thread busy time over the whole process life (start-up and warm-up included), native frames charged to their nearest caller outside Node core. The profiler samples wall-clock time: a native socket write also carries the time the kernel spends waking the receiving process on loopback, and any preemption at that point on a busy machine, so native write shares overstate their CPU; CPU µs/request is from /proc.',
      ...folded,
    };
  } finally {
    await sidecar.program.stop();
    await user.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return result;
}

export function profileMarkdown(r: NonNullable<Awaited<ReturnType<typeof profileSidecar>>>): string {
  return [
    `Sidecar CPU profile (${r.store} store), ${r.startedAt}: wrk at saturation, ${r.requestsPerSecond} req/s, ${r.cpuUsPerRequest} µs CPU/request; load average ${r.loadavg.map((x) => x.toFixed(1)).join(' ')}. ${r.note}`,
    '',
    '| owner | share of busy time |',
    '|---|---:|',
    ...Object.entries(r.byOwner).slice(0, 16).map(([k, v]) => `| ${k} | ${v} % |`),
    '',
    '| heaviest functions (self time) | share |',
    '|---|---:|',
    ...r.top.slice(0, 12).map((t) => `| \`${t.fn}\` | ${t.selfPct} % |`),
  ].join('\n');
}

if (import.meta.main) {
  const store = process.argv[2] === 'memory' ? 'memory' : 'redis';
  const r = await profileSidecar(store);
  if (r !== undefined) {
    const out = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'results');
    mkdirSync(out, { recursive: true });
    const name = store === 'redis' ? 'profile-sidecar' : 'profile-sidecar-memory';
    writeFileSync(path.join(out, `${name}.json`), `${JSON.stringify(r, null, 2)}\n`);
    writeFileSync(path.join(out, `${name}.md`), `${profileMarkdown(r)}\n`);
    console.log(profileMarkdown(r));
  }
}
