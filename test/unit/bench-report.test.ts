// The benchmark report: the summary's rows for the container-memory and instructions suites and the
// p99 context, the callgrind dump reading, and the /proc reading behind the private/executable split
// of the gateway's peak memory.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { containerMemoryMarkdown, type ContainerMemoryBenchResult, type ContainerMemoryRun } from '../../bench/tools/container-memory.ts';
import { gatewayGoals, gatewayMarkdown, rotated, rssSplitKiB, type GatewayBenchResult, type GatewayScenarioResult } from '../../bench/gateway.ts';
import { callgrindTotal, instructionRatios, instructionsMarkdown, type InstructionsBenchResult, type InstructionsRun } from '../../bench/tools/instructions.ts';
import { headline } from '../../bench/summary.ts';

const run = (executable: 'shared' | 'charged', limitMiB: number, requestsPerSecond: number, majorFaults: number): ContainerMemoryRun => ({
  executable,
  limitMiB,
  requestsPerSecond,
  cpuUsPerRequest: requestsPerSecond === 0 ? 0 : 95.5,
  majorFaults,
  peakChargeMiB: 84.2,
  chargeAtEnd: { anonMiB: 80.1, fileMiB: 0.4 },
  limitHits: 0,
  oomKills: 0,
  errors: 0,
});

function resultsDir(files: Record<string, unknown>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-bench-report-'));
  for (const [name, body] of Object.entries(files)) writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(body));
  return dir;
}

describe('bench report', () => {
  it('says loudly that the container-memory suite did not run, and why', () => {
    const result: ContainerMemoryBenchResult = { suite: 'container-memory', startedAt: 'then', notRun: 'no memory cgroup controller', runs: [], goal: undefined };
    expect(containerMemoryMarkdown(result)).toContain('**not run on this machine**: no memory cgroup controller');
    expect(headline(resultsDir({ 'container-memory': result }))).toContain('**not run on this machine**: no memory cgroup controller');
  });

  it('puts the container-memory goal and the executable-charged context into the headline', () => {
    const result: ContainerMemoryBenchResult = {
      suite: 'container-memory',
      startedAt: 'then',
      cgroupVersion: 2,
      runs: [run('shared', 100, 9900, 0), run('shared', 1024, 10000, 0), run('charged', 100, 0, 851), run('charged', 160, 9800, 0)],
      goal: { name: 'sidecar under a 100 MiB limit', goal: 'no OOM kill', measured: '9900 req/s vs 10000', met: true },
    };
    const head = headline(resultsDir({ 'container-memory': result }));
    expect(head).toContain('| gateway: sidecar under a 100 MiB limit | no OOM kill | 9900 req/s vs 10000 | yes |');
    expect(head).toContain('0 req/s, 851 major faults at 100 MiB; 9800 req/s, 0 major faults at 160 MiB');
    // A run that served nothing has no CPU per request, not a division by one.
    expect(containerMemoryMarkdown(result)).toMatch(/\| charged \| 100 \| 0 \| - \| 851 \|/);
  });

  it('lists the p99 the other proxies added in the same rounds next to the goal', () => {
    const scenario = (name: string, p99AddedMs?: number) => ({
      name,
      description: name,
      saturation: { requestsPerSecond: 1, latencyMs: { p50: 1, p99: 1, p999: 1, max: 1 }, cpuUsPerRequest: 1, errors: 0 },
      fixedRate: { offered: 1, achieved: 1, latencyMs: { p50: 1, p99: 1, p999: 1, max: 1 }, cpuUsPerRequest: 1, waitingForCpu: 0.1, ...(p99AddedMs === undefined ? {} : { p99AddedMs }), errors: 0 },
      peakRssMiB: 1,
      sampledPeak: { rssMiB: 1, anonMiB: 0.5, fileMiB: 0.5 },
      rounds: { saturation: [], fixedRate: [] },
    });
    const gateway = { suite: 'gateway', scenarios: [scenario('direct'), scenario('sidecar-redis', 20.5), scenario('nginx', 3.6), scenario('bare-proxy', 17.2)], ratios: {}, goals: [], machine: { loadavgAtStart: [], loadavgAtEnd: [] } };
    expect(headline(resultsDir({ gateway }))).toContain('| - | nginx 3.6 ms, bare-proxy 17.2 ms | - |');
  });

  it('sets the floor of a Node proxy beside the goals, from the same rounds', () => {
    const scenario = (name: string, peakRssMiB: number, p99AddedMs?: number) => ({
      name,
      description: name,
      saturation: { requestsPerSecond: 1, latencyMs: { p50: 1, p99: 1, p999: 1, max: 1 }, cpuUsPerRequest: 1, errors: 0 },
      fixedRate: { offered: 1, achieved: 1, latencyMs: { p50: 1, p99: 1, p999: 1, max: 1 }, cpuUsPerRequest: 1, waitingForCpu: 0.1, ...(p99AddedMs === undefined ? {} : { p99AddedMs }), errors: 0 },
      peakRssMiB,
      sampledPeak: { rssMiB: 1, anonMiB: 0.5, fileMiB: 0.5 },
      rounds: { saturation: [], fixedRate: [] },
    });
    const gateway = {
      suite: 'gateway',
      scenarios: [scenario('direct', 90), scenario('sidecar-redis', 125, 12.5), scenario('bare-proxy', 111.4, 9.75)],
      ratios: { 'throughput bare-proxy/node-peer': 1.58 },
      goals: [],
      machine: { loadavgAtStart: [], loadavgAtEnd: [] },
    };
    const row = headline(resultsDir({ gateway })).split('\n').find((r) => r.includes('the floor of any Node proxy'));
    expect(row).toContain('| throughput vs Node peer 1.58x, p99 added over direct 9.75 ms, peak RSS 111.4 MiB |');
    // Without a bare-proxy run there is no floor to show.
    const without = { ...gateway, scenarios: gateway.scenarios.filter((x) => x.name !== 'bare-proxy') };
    expect(headline(resultsDir({ gateway: without }))).not.toContain('the floor of any Node proxy');
  });

  it('rotates the order of the targets so that each leads one round and none always follows another', () => {
    const targets = ['direct', 'sidecar', 'peer', 'nginx'];
    const rounds = targets.map((_, r) => rotated(targets, r));
    expect(rounds[1]).toEqual(['sidecar', 'peer', 'nginx', 'direct']);
    expect(new Set(rounds.map((r) => r[0]))).toEqual(new Set(targets));
    for (const r of rounds) expect([...r].sort()).toEqual([...targets].sort());
    expect(rotated(targets, targets.length)).toEqual(targets);
  });

  it('prints each ratio with the lowest and highest round beside the median', () => {
    const result: GatewayBenchResult = {
      suite: 'gateway',
      startedAt: 'then',
      machine: { cpus: 2, model: 'test', node: 'v24', loadavgAtStart: [1], loadavgAtEnd: [1] },
      load: { saturation: 'wrk', fixedRate: 'loadgen', connections: 50, durationS: 4, warmupS: 5, rounds: 7 },
      scenarios: [],
      ratios: { 'throughput sidecar-redis/node-peer': 1.51, 'throughput nginx/direct': 0.6 },
      ratioRanges: { 'throughput sidecar-redis/node-peer': [1.05, 1.85] },
      goals: [],
    };
    const md = gatewayMarkdown(result);
    expect(md).toContain('throughput sidecar-redis/node-peer = 1.51 [1.05-1.85]; throughput nginx/direct = 0.6.');
    expect(md).toContain('median of 7 interleaved rounds of 4 s per load (order rotated each round)');
  });

  it('judges the sidecar against the bare proxy per round: CPU at saturation and at the fixed rate, p99 added over direct', () => {
    const lat = { p50: 0, p99: 0, p999: 0, max: 0 };
    const front = (name: string, satCpu: number[], fixedCpu: number[], p99: number[]): GatewayScenarioResult => ({
      name,
      description: name,
      saturation: { requestsPerSecond: 1000, latencyMs: lat, cpuUsPerRequest: 0, errors: 0 },
      fixedRate: { offered: 6800, achieved: 6800, latencyMs: lat, cpuUsPerRequest: 0, waitingForCpu: 0, errors: 0 },
      peakRssMiB: 0,
      sampledPeak: { rssMiB: 0, anonMiB: 0, fileMiB: 0 },
      rounds: {
        saturation: satCpu.map((cpuUsPerRequest) => ({ requestsPerSecond: 1000, p50Ms: 1, p99Ms: 2, p999Ms: 3, cpuUsPerRequest })),
        fixedRate: fixedCpu.map((cpuUsPerRequest, i) => ({ achieved: 6800, p50Ms: 1, p99Ms: p99[i] as number, p999Ms: 20, cpuUsPerRequest, waitingForCpu: 0 })),
      },
    });
    const { goals, ratios, ratioRanges } = gatewayGoals(
      [
        front('direct', [20, 20, 20], [30, 30, 30], [1.5, 1.5, 1.5]),
        front('bare-proxy', [60, 60, 64], [100, 100, 100], [3.5, 3, 1.4]),
        front('sidecar-redis', [70, 72, 80], [100, 110, 105], [4.5, 3, 12]),
        front('sidecar-memory', [66, 63, 64], [101, 99, 100], [3.5, 3.75, 2]),
      ],
      3,
      6800,
    );
    const goal = (name: string) => goals.find((g) => g.name === name);
    // 70/60, 72/60, 80/64: 1.17, 1.2, 1.25.
    expect(goal("sidecar CPU per request at saturation, over the bare Node proxy's")).toEqual({
      name: "sidecar CPU per request at saturation, over the bare Node proxy's",
      goal: '<= 1.15x',
      measured: '1.2x (rounds 1.17-1.25); memory store 1.05x (rounds 1-1.1)',
      met: false,
    });
    // 1, 1.1, 1.05.
    expect(goal("sidecar CPU per request at 6800 req/s, over the bare Node proxy's")).toMatchObject({ measured: '1.05x (rounds 1-1.1); memory store 1x (rounds 0.99-1.01)', met: true });
    // Added over direct: sidecar 3, 1.5, 10.5; bare proxy 2, 1.5 and nothing in round 3 (below direct), which gives no ratio.
    expect(ratios["sidecar-redis/bare-proxy p99 added over direct at 6800 req/s"]).toBe(1.25);
    expect(ratioRanges["sidecar-redis/bare-proxy p99 added over direct at 6800 req/s"]).toEqual([1, 1.5]);
    expect(goal("sidecar p99 added over direct at 6800 req/s, over the bare Node proxy's")?.met).toBe(false);
    // Without the bare proxy in the run there is nothing to judge these goals by.
    const alone = gatewayGoals([front('direct', [20], [30], [1.5]), front('sidecar-redis', [70], [100], [4])], 1, 6800);
    expect(alone.goals.filter((g) => g.name.includes('bare Node proxy'))).toEqual([]);
  });

  it('splits a live process resident set into anonymous and file pages', () => {
    const self = rssSplitKiB(process.pid);
    expect(self.anon).toBeGreaterThan(0);
    expect(self.file).toBeGreaterThan(0);
    // VmRSS is the sum of the anonymous, file and shared-memory parts (read in one go).
    expect(self.anon + self.file).toBeLessThanOrEqual(self.rss);
    expect(rssSplitKiB(2 ** 22 + 12345)).toEqual({ rss: 0, anon: 0, file: 0 });
  });
});

describe('instructions report', () => {
  const insRun = (target: string, instructionsPerRequest: number): InstructionsRun => ({
    target,
    description: target,
    requests: 6000,
    instructions: instructionsPerRequest * 6000,
    instructionsPerRequest,
    requestsPerSecond: 200,
    errors: 0,
  });

  it('reads the total from a callgrind dump, whichever line carries it', () => {
    expect(callgrindTotal('version: 1\ncmd: node\nevents: Ir\nsummary: 3183446207\n\nfn=(1) main\n')).toBe(3183446207);
    expect(callgrindTotal('events: Ir\nfn=(1)\n0 5\ntotals: 42\n')).toBe(42);
    expect(callgrindTotal('events: Ir\nfn=(1)\n0 5\n')).toBeUndefined();
  });

  it('gives every front relative to the Redis sidecar, and no ratio without it', () => {
    const runs = [insRun('sidecar-redis', 400_000), insRun('node-peer', 560_000), insRun('nginx', 100_000)];
    expect(instructionRatios(runs)).toEqual({ 'node-peer/sidecar-redis': 1.4, 'nginx/sidecar-redis': 0.25 });
    expect(instructionRatios(runs.slice(1))).toEqual({});
    const result: InstructionsBenchResult = { suite: 'instructions', startedAt: 'then', valgrind: 'valgrind-3.19.0', warmupRequests: 50_000, durationS: 60, runs, ratios: instructionRatios(runs) };
    expect(instructionsMarkdown(result)).toContain('| node-peer | node-peer | 6000 | 560,000 | 1.40x | 200 | 0 |');
    expect(headline(resultsDir({ instructions: result }))).toContain('sidecar-redis 400,000; the others / sidecar-redis | - | node-peer 1.4x, nginx 0.25x | - |');
  });

  it('marks a front whose count includes failed requests', () => {
    const runs = [insRun('sidecar-redis', 400_000), { ...insRun('node-peer', 900_000), errors: 15 }];
    const result: InstructionsBenchResult = { suite: 'instructions', startedAt: 'then', valgrind: 'valgrind-3.19.0', warmupRequests: 50_000, durationS: 60, runs, ratios: instructionRatios(runs) };
    expect(headline(resultsDir({ instructions: result }))).toContain('| - | node-peer 2.25x (with 15 failed requests) | - |');
  });

  it('says loudly that it did not run, and why', () => {
    const result: InstructionsBenchResult = { suite: 'instructions', startedAt: 'then', notRun: 'valgrind is not installed', runs: [], ratios: {} };
    expect(instructionsMarkdown(result)).toContain('**not run on this machine**: valgrind is not installed');
    expect(headline(resultsDir({ instructions: result }))).toContain('**not run on this machine**: valgrind is not installed');
  });
});
