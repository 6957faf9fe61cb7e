// The token suite's result and its Markdown (bench/results/token.md).

export interface TokenServerResult {
  readonly name: string;
  readonly description: string;
  /** Median over rounds. */
  readonly exchangesPerSecond: number;
  readonly latencyMs: { p50: number; p99: number; p999: number };
  readonly cpuUsPerExchange: number;
  readonly failures: number;
  readonly peakRssMiB: number;
  /** What one issued access token looked like (checked, not assumed). */
  readonly accessToken: {
    alg: string;
    typ: string;
    aud: unknown;
    hasRefreshToken: boolean;
    hasIdToken: boolean;
  };
  readonly rounds: {
    exchangesPerSecond: number;
    p50Ms: number;
    p99Ms: number;
    cpuUsPerExchange: number;
    failures: number;
  }[];
}

export interface TokenBenchResult {
  readonly suite: 'token';
  readonly startedAt: string;
  readonly machine: {
    cpus: number;
    model: string;
    node: string;
    loadavgAtStart: number[];
    loadavgAtEnd: number[];
  };
  readonly load: { codesPerRound: number; connections: number; rounds: number; generator: string };
  readonly servers: TokenServerResult[];
  /** Median of per-round ratios. */
  readonly ratio: number;
  readonly goal: { goal: string; measured: string; met: boolean };
}

export function tokenMarkdown(r: TokenBenchResult): string {
  return [
    `Token endpoint, ${r.startedAt}: ${r.machine.cpus} CPUs, Node ${r.machine.node}; ${r.load.codesPerRound} codes per round minted through each server's flow, ` +
      `then exchanged by ${r.load.generator} over ${r.load.connections} connections; median of ${r.load.rounds} interleaved rounds; ` +
      `load average ${r.machine.loadavgAtStart.map((x) => x.toFixed(1)).join(' ')} at start, ${r.machine.loadavgAtEnd.map((x) => x.toFixed(1)).join(' ')} at end.`,
    '',
    '| server | exchanges/s | p50 / p99 / p99.9 ms | CPU µs/exchange | access token | id_token | refresh token | failures | peak RSS MiB |',
    '|---|---:|---:|---:|---|---|---|---:|---:|',
    ...r.servers.map(
      (s) =>
        `| ${s.description} | ${s.exchangesPerSecond} | ${s.latencyMs.p50} / ${s.latencyMs.p99} / ${s.latencyMs.p999} | ${s.cpuUsPerExchange} | ` +
        `JWT ${s.accessToken.alg}, typ ${s.accessToken.typ} | ${s.accessToken.hasIdToken ? 'yes' : 'no'} | ${s.accessToken.hasRefreshToken ? 'yes' : 'no'} | ${s.failures} | ${s.peakRssMiB} |`,
    ),
    '',
    `Portcullis / oidc-provider exchanges per second (median of per-round ratios): ${r.ratio}x; goal ${r.goal.goal}: ${r.goal.met ? 'met' : 'not met'}.`,
  ].join('\n');
}
