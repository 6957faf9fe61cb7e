// Preloaded into a benchmarked program (`node --import bench/tools/gc-pauses.ts`): records every
// garbage-collection pause of its main thread and writes them to GC_PAUSES_FILE at exit, one
// 'start-Unix-µs duration-µs kind' line each (kind as node:perf_hooks reports it: 1 minor, 2 major,
// 4 incremental marking, 8 weak callbacks). Unix time, so they line up with the load generator's
// timeline of requests. Costs one callback per pause, nothing per request.
import { writeFileSync } from 'node:fs';
import { PerformanceObserver, performance, type PerformanceEntry } from 'node:perf_hooks';

const file = process.env['GC_PAUSES_FILE'];
if (file !== undefined && file !== '') {
  const lines: string[] = [];
  const origin = performance.timeOrigin;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries() as (PerformanceEntry & { detail?: { kind?: number } })[]) {
      lines.push(`${Math.round((origin + e.startTime) * 1000)} ${Math.round(e.duration * 1000)} ${e.detail?.kind ?? 0}`);
    }
  }).observe({ entryTypes: ['gc'] });
  process.on('exit', () => writeFileSync(file, lines.length === 0 ? '' : `${lines.join('\n')}\n`));
}
