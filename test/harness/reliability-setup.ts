// vitest setupFiles entry of every tier (vitest.config.ts). For each test file it:
//   - wraps fetch so that every credential the test sends or receives (client secrets, passwords,
//     codes, verifiers, tokens, Basic/Bearer values, cookies) is tracked for the log scanner, and
//     counts the requests for the reliability numbers (docs/reference/reliability.md);
//   - after the file (around it: after its afterAll hooks and after its file fixtures stopped the
//     programs, so their shutdown lines are read too), scans every log line of every program the
//     file started (test/harness/programs.ts) and fails the file when a tracked secret or a
//     secret-looking value appears (test/harness/log-scan.ts);
//   - writes the file's reliability counts to test-results/reliability/.
import { aroundAll, expect } from 'vitest';
import {
  formatFindings,
  scanLines,
  trackAuthorization,
  trackCookies,
  trackJson,
  trackParams,
  trackSecret,
  trackedSecretCount,
  type Finding,
} from './log-scan.ts';
import { startedPrograms } from './programs.ts';
import { flushCounts, recordCases, recordFailure, recordRequests } from './reliability-counts.ts';

const WRAPPED = Symbol.for('portcullis.fetchWrapped');
const pending = new Set<Promise<void>>();

/** The demo credentials of the local stack (`make run`) are secrets too. */
trackSecret('wonderland', 'demo password');
trackSecret(process.env.DEMO_CLIENT_SECRET, 'DEMO_CLIENT_SECRET');

function trackRequest(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): void {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  try {
    trackParams(new URL(url).searchParams, 'request query');
  } catch {
    // a relative or malformed URL: fetch itself will complain
  }
  const headers = new Headers(
    init?.headers ?? (input instanceof Request ? input.headers : undefined),
  );
  trackAuthorization(headers.get('authorization'), 'request');
  trackCookies(headers.get('cookie'), 'request');
  const body = init?.body;
  if (typeof body === 'string') {
    try {
      trackJson(JSON.parse(body), 'request body');
    } catch {
      trackParams(new URLSearchParams(body), 'request body');
    }
  } else if (body instanceof URLSearchParams) {
    trackParams(body, 'request body');
  } else if (body instanceof FormData) {
    for (const [k, v] of body)
      if (typeof v === 'string') trackParams(new URLSearchParams([[k, v]]), 'request form');
  }
}

function trackResponse(response: Response): void {
  const location = response.headers.get('location');
  if (location !== null) {
    try {
      const u = new URL(location, 'http://x');
      trackParams(u.searchParams, 'redirect query');
      trackParams(new URLSearchParams(u.hash.slice(1)), 'redirect fragment');
    } catch {
      // not a URL
    }
  }
  for (const c of response.headers.getSetCookie()) trackCookies(c.split(';')[0], 'response');
  const type = response.headers.get('content-type') ?? '';
  if (type.includes('json') && response.body !== null) {
    const p = response
      .clone()
      .json()
      .then((v: unknown) => trackJson(v, 'response'))
      .catch(() => {})
      .finally(() => pending.delete(p));
    pending.add(p);
  }
}

const g = globalThis as typeof globalThis & { [WRAPPED]?: boolean };
if (g[WRAPPED] !== true) {
  const original = globalThis.fetch;
  globalThis.fetch = async (
    input: Parameters<typeof fetch>[0],
    init?: RequestInit,
  ): Promise<Response> => {
    recordRequests('HTTP requests (fetch)', 1);
    trackRequest(input, init);
    const response = await original(input, init);
    trackResponse(response);
    return response;
  };
  g[WRAPPED] = true;
}

aroundAll(async (runFile) => {
  await runFile();
  const file = expect.getState().testPath ?? 'unknown';
  await Promise.allSettled([...pending]);
  const findings: Finding[] = [];
  let lines = 0;
  for (const p of startedPrograms) {
    lines += p.lines.length;
    findings.push(...scanLines(p.name, p.lines));
  }
  if (startedPrograms.length > 0) recordCases('log lines scanned for secrets', lines);
  if (findings.length > 0) recordFailure('secrets in logs', findings.length);
  flushCounts(file, {
    logScan: {
      programs: startedPrograms.length,
      lines,
      trackedSecrets: trackedSecretCount(),
      findings: findings.length,
    },
  });
  startedPrograms.length = 0;
  if (findings.length > 0) {
    throw new Error(
      `log scanner: ${findings.length} log line(s) contain a secret, code, token or password:\n${formatFindings(findings)}`,
    );
  }
});
