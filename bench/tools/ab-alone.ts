// The measures of bench/tools/ab.ts that run each bundle alone under a tool: callgrind's
// instructions per request (--callgrind), and V8's sampling heap profiler with --trace-gc for the
// bytes allocated per request and the GCs (--alloc). Each answers its lines of the Markdown.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { connectInspector, type AllocationNode } from '../../test/harness/inspector.ts';
import { freePort } from '../../test/harness/ports.ts';
import type { Program, RunningSidecar } from '../../test/harness/programs.ts';
import { countInstructions } from '../lib/callgrind.ts';
import { withNodeOptions } from '../lib/fronts.ts';
import { runRate } from '../lib/loadgen.ts';
import { median, r2 } from '../lib/measure.ts';
import { alternate } from './ab-rounds.ts';

/** A bundle to start: A (a git revision's) or B (the working tree's), with its environment. */
export interface Side {
  readonly name: string;
  readonly entry: string;
  readonly env: Record<string, string>;
}

/** Starts a bundle with its side's config; `launcher` wraps node (valgrind, a shell adding a flag). */
export type StartBundle = (
  entry: string,
  env: Record<string, string>,
  name: string,
  launcher?: string[],
) => Promise<RunningSidecar>;

/** Bytes a V8 sampling heap profile allocated in all, garbage included. */
function allocatedBytes(head: AllocationNode): number {
  let total = 0;
  const pending: AllocationNode[] = [head];
  for (let n = pending.pop(); n !== undefined; n = pending.pop()) {
    total += n.selfSize;
    pending.push(...n.children);
  }
  return total;
}

/** GC lines (--trace-gc) a program has printed so far, by kind. */
function gcCounts(p: Program): { scavenges: number; majors: number } {
  return {
    scavenges: p.lines.filter((l) => / Scavenge /.test(l)).length,
    majors: p.lines.filter((l) => / Mark-Compact /.test(l)).length,
  };
}

/** Bytes allocated per request and GCs per 1,000 requests of a sidecar started with --inspect and --trace-gc, at `perSecond`. */
async function allocation(
  s: RunningSidecar,
  perSecond: number,
  headers: Record<string, string>,
): Promise<{ bytes: number; scavenges: number; majors: number }> {
  const url = `${s.url}/healthcheck/ready`;
  await runRate({ url, rate: perSecond, durationS: 5, connections: 50, headers });
  const inspector = await connectInspector(s.program);
  try {
    const before = gcCounts(s.program);
    const { result: lg, head } = await inspector.sampleAllocations(1024, () =>
      runRate({ url, rate: perSecond, durationS: 10, connections: 50, headers }),
    );
    const after = gcCounts(s.program);
    const n = Math.max(1, lg.completed);
    return {
      bytes: Math.round(allocatedBytes(head) / n),
      scavenges: r2(((after.scavenges - before.scavenges) * 1000) / n),
      majors: r2(((after.majors - before.majors) * 1000) / n),
    };
  } finally {
    inspector.close();
  }
}

/** Instructions per request of each side alone under callgrind, `runs` runs of each, alternating. */
export async function callgrindLines(
  sides: [Side, Side],
  start: StartBundle,
  outDir: string,
  runs: number,
  headers: Record<string, string>,
): Promise<string[]> {
  execFileSync('mkdir', ['-p', outDir]);
  const counts = await alternate(
    sides[0],
    sides[1],
    async ({ name, entry, env }) => {
      const s = await start(entry, env, `ab-callgrind-${name}`, [
        'valgrind',
        '--tool=callgrind',
        `--callgrind-out-file=${path.join(outDir, `${name}.%p`)}`,
      ]);
      try {
        const c = await countInstructions({
          name,
          pid: s.program.child.pid as number,
          url: `${s.url}/healthcheck/ready`,
          outDir,
          warmupRequests: 50_000,
          durationS: 60,
          headers,
          log: console.log,
        });
        if (c.errors > 0) console.log(`callgrind ${name}: ${c.errors} errors`);
        return c.instructionsPerRequest;
      } finally {
        await s.program.stop();
      }
    },
    (run, ca, cb) => console.log(`callgrind run ${run}: A ${ca}, B ${cb} instructions per request`),
    runs,
  );
  const each = (xs: number[]) => xs.map((x) => x.toLocaleString('en-US')).join(', ');
  return [
    '',
    `callgrind (alone, 50,000 requests of warm-up, 60 s counted, ${runs} run${runs === 1 ? '' : 's'} of each, alternating): ` +
      `A ${each(counts[0])}, B ${each(counts[1])} instructions per request (B/A of the medians ${r2(median(counts[1]) / median(counts[0]))}).`,
  ];
}

/** Bytes allocated per request and GCs per 1,000 requests of each side alone at `allocRate` req/s. */
export async function allocationLines(
  sides: [Side, Side],
  start: StartBundle,
  allocRate: number,
  runs: number,
  headers: Record<string, string>,
): Promise<string[]> {
  const allocs = await alternate(
    sides[0],
    sides[1],
    async ({ name, entry, env }) => {
      // --trace-gc is not allowed in NODE_OPTIONS: it goes on node's command line.
      const traceGc = ['sh', '-c', 'exec "$0" --trace-gc "$@"'];
      const s = await start(
        entry,
        withNodeOptions({ ...env }, `--inspect=127.0.0.1:${await freePort()}`),
        `ab-alloc-${name}`,
        traceGc,
      );
      try {
        return await allocation(s, allocRate, headers);
      } finally {
        await s.program.stop();
      }
    },
    (run, x, y) =>
      console.log(
        `alloc run ${run}: A ${x.bytes}, B ${y.bytes} bytes per request; scavenges per 1,000 requests A ${x.scavenges}, B ${y.scavenges}`,
      ),
    runs,
  );
  const col = (i: 0 | 1, k: 'bytes' | 'scavenges' | 'majors') =>
    allocs[i].map((x) => x[k]).join(', ');
  return [
    '',
    `Allocation: each bundle alone at ${allocRate} req/s (bench/loadgen), 5 s of warm-up, 10 s sampled, ${runs} run${runs === 1 ? '' : 's'} of each, alternating.`,
    '',
    '| | A | B | B/A of the medians |',
    '|---|---:|---:|---:|',
    `| bytes allocated per request | ${col(0, 'bytes')} | ${col(1, 'bytes')} | ${r2(median(allocs[1].map((x) => x.bytes)) / median(allocs[0].map((x) => x.bytes)))} |`,
    `| scavenges per 1,000 requests | ${col(0, 'scavenges')} | ${col(1, 'scavenges')} | |`,
    `| major GCs per 1,000 requests | ${col(0, 'majors')} | ${col(1, 'majors')} | |`,
  ];
}
