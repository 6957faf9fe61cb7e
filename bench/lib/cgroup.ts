// A memory cgroup with a hard limit, to run a program as a pod's `resources.limits.memory` would
// (RSS alone counts the node executable's pages in full; the kernel charges a page-cache page to
// the first cgroup that read it and reclaims clean file pages before it kills anything). Needs
// root and a writable memory controller (cgroup v1 or v2); elsewhere makeCgroup says why not.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface MemoryCgroup {
  readonly version: 1 | 2;
  readonly dir: string;
  setLimit(bytes: number): void;
  /** Highest charge since the cgroup was made (v1: max_usage_in_bytes, v2: memory.peak), bytes. */
  peak(): number;
  /** What the kubelet reports as the container's working set: the charge less its inactive file pages, bytes. */
  workingSet(): number;
  remove(): void;
}

const read = (file: string) => readFileSync(file, 'utf8').trim();
const statField = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);

/** A figure in a cgroup file: the whole file is a number, or a `name value` line of it. */
type Figure = readonly [file: string, field?: string];

/** Where each cgroup version keeps the figures read here. */
const layouts = {
  1: {
    limit: 'memory.limit_in_bytes',
    usage: 'memory.usage_in_bytes',
    peak: ['memory.max_usage_in_bytes'],
    inactiveFile: 'total_inactive_file',
  },
  2: {
    limit: 'memory.max',
    usage: 'memory.current',
    peak: ['memory.peak'],
    inactiveFile: 'inactive_file',
  },
} as const satisfies Record<
  1 | 2,
  { limit: string; usage: string; peak: Figure; inactiveFile: string }
>;

function cgroupAt(version: 1 | 2, dir: string): MemoryCgroup {
  const l = layouts[version];
  const figure = ([file, field]: Figure) => {
    const text = read(path.join(dir, file));
    return field === undefined ? Number(text) : statField(text, field);
  };
  return {
    version,
    dir,
    setLimit: (b) => writeFileSync(path.join(dir, l.limit), String(b)),
    peak: () => figure(l.peak),
    workingSet: () =>
      Math.max(
        0,
        Number(read(path.join(dir, l.usage))) -
          statField(read(path.join(dir, 'memory.stat')), l.inactiveFile),
      ),
    remove: () => rmdirSync(dir),
  };
}

/** A new child of this process' memory cgroup, or the reason there can be none. */
export function makeCgroup(name: string): MemoryCgroup | string {
  const lines = read('/proc/self/cgroup').split('\n');
  const v1 = lines.find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  const v1Root = '/sys/fs/cgroup/memory';
  const v2 = lines.find((l) => l.startsWith('0::'));
  const v2Root = existsSync('/sys/fs/cgroup/cgroup.controllers')
    ? '/sys/fs/cgroup'
    : '/sys/fs/cgroup/unified';
  try {
    if (v1 !== undefined && existsSync(path.join(v1Root, 'memory.limit_in_bytes'))) {
      const dir = path.join(v1Root, v1.split(':')[2] ?? '/', name);
      mkdirSync(dir);
      return cgroupAt(1, dir);
    }
    if (v2 === undefined) return 'no memory cgroup controller in /proc/self/cgroup';
    const parent = path.join(v2Root, v2.slice(3));
    if (!read(path.join(parent, 'cgroup.subtree_control')).split(' ').includes('memory'))
      return `the cgroup v2 group ${parent} does not delegate the memory controller`;
    const dir = path.join(parent, name);
    mkdirSync(dir);
    return cgroupAt(2, dir);
  } catch (err) {
    return `cannot make a memory cgroup: ${(err as Error).message}`;
  }
}
