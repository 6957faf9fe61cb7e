// Counts for the numbers of docs/reference/reliability.md: cases tried, faults injected, requests
// sent. Each test file adds to in-memory counters; the shared setup file (reliability-setup.ts)
// writes them to test-results/reliability/ after the file, and scripts/reliability-summary.ts
// adds every file's numbers up.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './programs.ts';

type Kind = 'cases' | 'faults' | 'requests' | 'failures';

const counters: Record<Kind, Map<string, number>> = {
  cases: new Map(),
  faults: new Map(),
  requests: new Map(),
  failures: new Map(),
};

function add(kind: Kind, label: string, n: number): void {
  const m = counters[kind];
  m.set(label, (m.get(label) ?? 0) + n);
}

/** Generated inputs or documents tried (property runs, fuzz cases). */
export function recordCases(label: string, n = 1): void {
  add('cases', label, n);
}

/** Faults injected (SIGKILL of Redis, restarts, config changes, conflicting writes). */
export function recordFaults(label: string, n = 1): void {
  add('faults', label, n);
}

/** HTTP requests (or raw connections) sent to our programs. */
export function recordRequests(label: string, n = 1): void {
  add('requests', label, n);
}

/** An invariant that did not hold (the test also fails; this keeps the tally honest). */
export function recordFailure(label: string, n = 1): void {
  add('failures', label, n);
}

export function snapshotCounts(): Record<Kind, Record<string, number>> {
  return {
    cases: Object.fromEntries(counters.cases),
    faults: Object.fromEntries(counters.faults),
    requests: Object.fromEntries(counters.requests),
    failures: Object.fromEntries(counters.failures),
  };
}

/** Writes this file's counters (nothing when empty) and resets them. */
export function flushCounts(testFile: string, extra: Record<string, unknown> = {}): void {
  const snap = snapshotCounts();
  const empty = Object.values(snap).every((m) => Object.keys(m).length === 0);
  for (const m of Object.values(counters)) m.clear();
  if (empty) return;
  const dir = path.join(repoRoot, 'test-results', 'reliability');
  mkdirSync(dir, { recursive: true });
  const base = path.relative(repoRoot, testFile).replace(/[^A-Za-z0-9.-]+/g, '_');
  writeFileSync(
    path.join(dir, `${base}.json`),
    JSON.stringify(
      { file: path.relative(repoRoot, testFile), at: new Date().toISOString(), ...snap, ...extra },
      null,
      2,
    ),
  );
}
