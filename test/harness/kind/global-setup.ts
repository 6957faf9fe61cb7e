// vitest globalSetup of the e2e project: the host's kernel settings are read, the cluster is
// provisioned (cluster.ts) and handed to every test file; at the end what the run created is
// removed and the kernel settings are read again. A change fails the tier.
import type { TestProject } from 'vitest/node';
import { provision, type Provisioned } from './cluster.ts';
import { readSysctls, sysctlChanges, type SysctlSnapshot } from './sysctl.ts';

let provisioned: Provisioned | undefined;
let before: SysctlSnapshot | undefined;

export async function setup(project: TestProject): Promise<void> {
  before = readSysctls();
  provisioned = await provision();
  project.provide('e2e', provisioned.context);
}

export async function teardown(): Promise<void> {
  try {
    await provisioned?.teardown();
  } finally {
    if (before !== undefined) {
      const changes = sysctlChanges(before, readSysctls());
      if (changes.length > 0) {
        const list = changes
          .map((c) => `  ${c.key}: ${c.before ?? '(absent)'} -> ${c.after ?? '(absent)'}`)
          .join('\n');
        throw new Error(`the e2e tier changed the host's kernel settings:\n${list}`);
      }
      process.stderr.write(
        `e2e: the host's kernel settings are as they were (${Object.keys(before).length} compared)\n`,
      );
    }
  }
}
