// The measures of bench/tools/ab.ts that run each bundle alone under a tool: callgrind's
// instructions per request (--callgrind), and V8's sampling heap profiler with --trace-gc for the
// bytes allocated per request and the GCs (--alloc). Each answers its lines of the Markdown.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { connectInspector, type AllocationNode } from '../../test/harness/inspector.ts';
import type { Program, RunningSidecar } from '../../test/harness/programs.ts';
import { COUNTED, countInstructions } from '../lib/callgrind.ts';
import { runRate } from '../lib/load.ts';
import { median, r2 } from '../lib/measure.ts';
import { interleave } from '../lib/suite.ts';

/** A bundle to start: A (a git revision's) or B (the working tree's), with its environment. */
export interface Side {
  readonly name: string;
  readonly entry: string;
  readonly env: Record<string, string>;
}

/** Starts a side's bundle under `launcher` (valgrind, a shell adding a flag), `nodeOptions` added. */
type Start = (
  side: Side,
  name: string,
  launcher?: string[],
  nodeOptions?: string,
) => Promise<RunningSidecar>;

/** What the measures alone share: the sides and how to start one, the runs of each, the headers. */
export interface Alone {
  readonly sides: [Side, Side];
  readonly start: Start;
  readonly runs: number;
  readonly headers: Record<string, string>;
}

/** `measure` on each side started alone, `o.runs` runs of each, alternating; A's results, B's. */
async function alone<T>(
  o: Alone,
  what: string,
  launcher: string[],
  measure: (s: RunningSidecar) => Promise<T>,
  nodeOptions?: string,
): Promise<[T[], T[]]> {
  const [a = [], b = []] = await interleave(o.sides, o.runs, async (side, run) => {
    const s = await o.start(side, `ab-${what}-${side.name}`, launcher, nodeOptions);
    try {
      const x = await measure(s);
      console.log(`${what} run ${run}, ${side.name.toUpperCase()}: ${JSON.stringify(x)}`);
      return x;
    } finally {
      await s.program.stop();
    }
  });
  return [a, b];
}

const runsOfEach = (runs: number) => `${runs} run${runs === 1 ? '' : 's'} of each, alternating`;

/** Instructions per request of each side alone under callgrind. */
export async function callgrindLines(o: Alone, outDir: string): Promise<string[]> {
  mkdirSync(outDir, { recursive: true });
  const out = `--callgrind-out-file=${path.join(outDir, 'callgrind.%p')}`;
  const [a, b] = await alone(o, 'callgrind', ['valgrind', '--tool=callgrind', out], async (s) => {
    const front = { pid: s.program.child.pid as number, url: `${s.url}/healthcheck/ready` };
    const c = await countInstructions(front, outDir, o.headers);
    if (c.errors > 0) console.log(`callgrind: ${c.errors} errors`);
    return c.instructionsPerRequest;
  });
  const each = (xs: number[]) => xs.map((x) => x.toLocaleString('en-US')).join(', ');
  return [
    '',
    `callgrind (alone, ${COUNTED.warmupRequests.toLocaleString('en-US')} requests of warm-up, ${COUNTED.durationS} s counted, ${runsOfEach(o.runs)}): ` +
      `A ${each(a)}, B ${each(b)} instructions per request (B/A of the medians ${r2(median(b) / median(a))}).`,
  ];
}

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
const gcCounts = (p: Program) => ({
  scavenges: p.lines.filter((l) => / Scavenge /.test(l)).length,
  majors: p.lines.filter((l) => / Mark-Compact /.test(l)).length,
});

/** Bytes allocated per request and GCs per 1,000 requests of a sidecar at `rate` req/s (bench/loadgen). */
async function allocation(s: RunningSidecar, rate: number, headers: Record<string, string>) {
  const url = `${s.url}/healthcheck/ready`;
  const load = (durationS: number) => runRate({ url, rate, durationS, connections: 50, headers });
  await load(5);
  const inspector = await connectInspector(s.program);
  try {
    const before = gcCounts(s.program);
    const { result: lg, head } = await inspector.sampleAllocations(1024, () => load(10));
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

/** The allocation of each side alone at `rate` req/s, with --trace-gc and the inspector (on the port it takes). */
export async function allocationLines(o: Alone, rate: number): Promise<string[]> {
  // --trace-gc is not allowed in NODE_OPTIONS: it goes on node's command line.
  const traceGc = ['sh', '-c', 'exec "$0" --trace-gc "$@"'];
  const measure = (s: RunningSidecar) => allocation(s, rate, o.headers);
  const [a, b] = await alone(o, 'alloc', traceGc, measure, '--inspect=127.0.0.1:0');
  const cols = (k: 'bytes' | 'scavenges' | 'majors') =>
    `${a.map((x) => x[k]).join(', ')} | ${b.map((x) => x[k]).join(', ')}`;
  const bytes = (xs: typeof a) => median(xs.map((x) => x.bytes));
  return [
    '',
    `Allocation: each bundle alone at ${rate} req/s (bench/loadgen), 5 s of warm-up, 10 s sampled, ${runsOfEach(o.runs)}.`,
    '',
    '| | A | B | B/A of the medians |',
    '|---|---:|---:|---:|',
    `| bytes allocated per request | ${cols('bytes')} | ${r2(bytes(b) / bytes(a))} |`,
    `| scavenges per 1,000 requests | ${cols('scavenges')} | |`,
    `| major GCs per 1,000 requests | ${cols('majors')} | |`,
  ];
}
