// The host's kernel settings before and after the e2e tier. A kind node is a privileged container
// that shares the host's kernel, so anything it (or the private dockerd) writes outside its own
// network namespace would outlive the run. The tier fails when a setting changed.
import { execFileSync } from 'node:child_process';

export type SysctlSnapshot = Record<string, string>;

/** Counters and values the kernel changes by itself from one read to the next. */
const VOLATILE = [
  /^fs\.(dentry-state|file-nr|inode-nr|inode-state)$/,
  /^fs\.quota\./,
  /^kernel\.ns_last_pid$/,
  /^kernel\.random\./,
  /^kernel\.pty\.nr$/,
  /^kernel\.(tainted|perf_event_max_sample_rate)$/,
  /^net\.netfilter\.nf_conntrack_count$/,
];

/** Settings of one network interface: they appear and vanish with the interface (the run's own bridges). */
const PER_INTERFACE = /^net\.(ipv4|ipv6)\.(conf|neigh)\.([^.]+)\./;

export function readSysctls(): SysctlSnapshot {
  const text = execFileSync('sysctl', ['-a'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const out: SysctlSnapshot = {};
  for (const line of text.split('\n')) {
    const eq = line.indexOf(' = ');
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 3);
  }
  return out;
}

export interface SysctlChange {
  readonly key: string;
  readonly before: string | undefined;
  readonly after: string | undefined;
}

/**
 * Settings that differ between two snapshots, leaving out volatile counters and the settings of
 * interfaces present in only one of them. A setting of an interface present in both (eth0, lo,
 * all, default) that changed is reported.
 */
export function sysctlChanges(before: SysctlSnapshot, after: SysctlSnapshot): SysctlChange[] {
  const changes: SysctlChange[] = [];
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (VOLATILE.some((re) => re.test(key))) continue;
    const b = before[key];
    const a = after[key];
    if (b === a) continue;
    if ((b === undefined || a === undefined) && PER_INTERFACE.test(key)) continue;
    changes.push({ key, before: b, after: a });
  }
  return changes.sort((x, y) => x.key.localeCompare(y.key));
}
