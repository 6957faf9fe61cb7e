// The command line of bench/tools/ab.ts (its header lists the flags), checked before anything runs.
import { parseArgs } from 'node:util';
import { SIDECAR_ENV } from '../../operator/resources/route/deployment.ts';

export function abOptions() {
  const { values } = parseArgs({
    options: {
      base: { type: 'string' },
      rounds: { type: 'string', default: '9' },
      duration: { type: 'string', default: '5' },
      callgrind: { type: 'boolean', default: false },
      'callgrind-runs': { type: 'string', default: '1' },
      alloc: { type: 'boolean', default: false },
      'alloc-rate': { type: 'string', default: '4000' },
      rate: { type: 'string' },
      env: { type: 'string', multiple: true, default: [] },
      store: { type: 'string', default: 'redis' },
      flood: { type: 'boolean', default: false },
      'hash-keys': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const base = values.base;
  if (base === undefined) throw new Error('--base REV is required (e.g. --base HEAD~1)');
  const rounds = Number(values.rounds);
  if (!(Number.isInteger(rounds) && rounds >= 0))
    throw new Error(
      `--rounds must be a whole number (0 skips the wall clock), got ${values.rounds}`,
    );
  if (values.store !== 'redis' && values.store !== 'memory')
    throw new Error(`--store must be redis or memory, got ${values.store}`);
  const durationS = Number(values.duration);
  const callgrindRuns = Number(values['callgrind-runs']);
  if (!(Number.isInteger(callgrindRuns) && callgrindRuns >= 1))
    throw new Error(
      `--callgrind-runs must be a whole number from 1, got ${values['callgrind-runs']}`,
    );
  const rate = values.rate === undefined ? undefined : Number(values.rate);
  if (rate !== undefined && !(rate > 0))
    throw new Error(`--rate must be a positive number of requests per second, got ${values.rate}`);
  if (rounds === 0 && (rate !== undefined || !(values.callgrind || values.alloc)))
    throw new Error(
      '--rounds 0 leaves only --callgrind and --alloc to measure (--rate runs in rounds too)',
    );
  const extraEnv = Object.fromEntries(
    values.env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const envB: Record<string, string> = { ...SIDECAR_ENV, ...extraEnv };
  return { values: { ...values, base }, rounds, durationS, callgrindRuns, rate, envB };
}
