// An idle sidecar must let its event loop sleep: its metrics used to sample the event-loop lag
// every 10 ms (prom-client's default), which woke every idle pod 100 times a second. The count of
// the main thread's voluntary context switches (Linux /proc) over an idle stretch is a count, not
// a time: a busy machine can only lower it.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Voluntary context switches of the main thread of a child that builds the metrics and idles 2 s. */
function idleWakeups(setup: string): number {
  const script = `
    import { readFileSync } from 'node:fs';
    ${setup}
    const switches = () => Number(/voluntary_ctxt_switches:\\s+(\\d+)/.exec(readFileSync('/proc/self/task/' + process.pid + '/status', 'utf8'))[1]);
    setTimeout(() => {
      const before = switches();
      setTimeout(() => { console.log(switches() - before); process.exit(0); }, 2000);
    }, 500);`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
  return Number(out.trim());
}

describe('sidecar metrics at rest', () => {
  it('wake an idle event loop a few times a second, not a hundred', () => {
    const metrics = `import { SidecarMetrics } from './sidecar/metrics.ts'; globalThis.keep = new SidecarMetrics();`;
    const wakeups = idleWakeups(metrics);
    // 100 ms sampling: ~20 in 2 s (plus V8's own housekeeping); 10 ms sampling: ~200.
    expect(wakeups).toBeLessThan(80);
    // The same child with prom-client's default sampling wakes far more: the probe sees the difference.
    const defaults = `import { Registry, collectDefaultMetrics } from 'prom-client'; collectDefaultMetrics({ register: new Registry() });`;
    expect(idleWakeups(defaults)).toBeGreaterThan(120);
  });
});
