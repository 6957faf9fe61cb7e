// The system-call tool's pure parts: reading perf's counts, the medians, the Redis store's share.
import { describe, expect, it } from 'vitest';
import { parseContextSwitches, parsePerfStat, summarizeSyscalls, syscallNs, syscallsMarkdown, type SyscallsBenchResult, type SyscallsPoint } from '../../bench/tools/syscalls.ts';

describe('system calls per request', () => {
  it('reads perf stat -x output: every call as `all`, named calls by name, an uncounted event left out (unknown, not 0)', () => {
    const stderr = [
      '120345,,raw_syscalls:sys_enter,5012345678,100.00,,',
      '20001,,syscalls:sys_enter_read,5012345678,100.00,,',
      '<not counted>,,syscalls:sys_enter_writev,0,0.00,,',
      '<not supported>,,syscalls:sys_enter_epoll_pwait2,0,0.00,,',
      '',
      'garbage line',
    ].join('\n');
    const counts = parsePerfStat(stderr);
    expect(Object.fromEntries(counts)).toEqual({ all: 120345, read: 20001 });
  });

  it('takes the median of each figure per target and rate, and the script calls only where Redis decided', () => {
    const point = (target: SyscallsPoint['target'], round: number, all: number, extra: Partial<SyscallsPoint> = {}): SyscallsPoint => ({
      target, rate: 2000, round, requests: 10000, perRequest: { all, write: all / 6 }, userUsPerRequest: all * 10, systemUsPerRequest: all * 5, sleepsPerRequest: all / 4, ...extra,
    });
    const rows = summarizeSyscalls([
      point('bare-proxy', 0, 6), point('bare-proxy', 1, 7), point('bare-proxy', 2, 6.5),
      point('sidecar-redis', 0, 9, { scriptCallsPerRequest: 0.7 }), point('sidecar-redis', 1, 8, { scriptCallsPerRequest: 0.8 }), point('sidecar-redis', 2, 10, { scriptCallsPerRequest: 0.75 }),
    ]);
    expect(rows.map((r) => [r.target, r.perRequest['all'], r.userUsPerRequest, r.sleepsPerRequest, r.scriptCallsPerRequest])).toEqual([
      ['bare-proxy', 6.5, 65, 1.63, undefined],
      ['sidecar-redis', 9, 90, 2.25, 0.75],
    ]);
  });

  it('charges the Redis sidecar\'s calls over the memory sidecar\'s to its script calls', () => {
    const row = (target: SyscallsPoint['target'], all: number, epoll: number, user: number, calls?: number) => ({
      target, rate: 2000, perRequest: { all, epoll_pwait: epoll }, userUsPerRequest: user, systemUsPerRequest: 50, sleepsPerRequest: epoll / 2, ...(calls === undefined ? {} : { scriptCallsPerRequest: calls }),
    });
    const result: SyscallsBenchResult = {
      suite: 'syscalls', startedAt: '2026-11-27T00:00:00.000Z', machine: '2 CPUs (test)', node: 'v24', syscallNs: 1020, rounds: 3, seconds: 5, points: [],
      rows: [row('bare-proxy', 6.3, 2.2, 90), row('sidecar-memory', 6.4, 2.2, 95), row('sidecar-redis', 9.4, 3.7, 115, 0.75)],
    };
    const md = syscallsMarkdown(result);
    expect(md).toContain('one system call costs 1020 ns here');
    expect(md).toContain('the Redis sidecar: 0.75 script calls per request');
    // (9.4 - 6.4) / 0.75 = 4 system calls, (3.7 - 2.2) / 0.75 = 2 epoll waits, (115 - 95) / 0.75 = 26.67 µs per script call.
    expect(md).toContain('| system calls | 6.30 | 6.40 | 9.40 | 4.00 |');
    expect(md).toContain('| `epoll_pwait` | 2.20 | 2.20 | 3.70 | 2.00 |');
    expect(md).toContain('| user CPU µs | 90.0 | 95.0 | 115.0 | 26.67 |');
    // (1.85 - 1.1) / 0.75 = 1 more sleep of the event loop per script call.
    expect(md).toContain('| sleeps of the event loop (each a wake-up) | 1.10 | 1.10 | 1.85 | 1.00 |');
  });

  it('reads the context switches from a process status, and says so when they are missing', () => {
    const status = 'Name:\tnode\nThreads:\t11\nvoluntary_ctxt_switches:\t41235\nnonvoluntary_ctxt_switches:\t377\n';
    expect(parseContextSwitches(status)).toEqual({ voluntary: 41235, involuntary: 377 });
    expect(() => parseContextSwitches('Name:\tnode\n')).toThrow(/voluntary_ctxt_switches/);
  });

  it('prices a system call by timing real getppid calls', () => {
    const ns = syscallNs(2000);
    expect(Number.isInteger(ns)).toBe(true);
    // Entering and leaving the kernel takes time on any machine; a figure of 0 would mean no call was made.
    expect(ns).toBeGreaterThan(0);
  });
});
