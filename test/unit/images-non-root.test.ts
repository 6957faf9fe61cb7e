// Images run as non-root: every Dockerfile in the repository sets, in its final stage, a USER that
// is neither root nor uid 0, and no instruction after it switches back. Every program is built from
// the one Dockerfile by name and folder, so each program's name must reach its entry file.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUNDLED_PROGRAMS } from '../../scripts/bundle.ts';
import { PROGRAMS } from '../harness/kind/cluster.ts';
import { repoRoot } from '../harness/programs.ts';
import { recordCases } from '../harness/reliability-counts.ts';

const dockerfiles = execFileSync(
  'git',
  ['ls-files', '--cached', '--others', '--exclude-standard', '*Dockerfile*'],
  { cwd: repoRoot, encoding: 'utf8' },
)
  .split('\n')
  .filter((f) => f !== '' && !f.startsWith('node_modules/'));

/** Instructions of a Dockerfile, continuation lines joined, comments dropped. */
function instructions(text: string): string[] {
  return text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

describe('container images', () => {
  it('there is a Dockerfile to check', () => {
    expect(dockerfiles).toContain('Dockerfile');
  });

  it.each(PROGRAMS)(
    '%s: the Dockerfile builds it by its image name (PROGRAM) from its folder (SOURCE)',
    (folder) => {
      const name = path.basename(folder) as keyof typeof BUNDLED_PROGRAMS;
      expect(BUNDLED_PROGRAMS[name]).toBe(`${folder}/main.ts`);
    },
  );

  it.each(dockerfiles)('%s: the final stage runs as a non-root USER', (file) => {
    recordCases('Dockerfiles checked for a non-root USER', 1);
    const lines = instructions(readFileSync(path.join(repoRoot, file), 'utf8'));
    const lastFrom = lines.map((l) => /^FROM\s/i.test(l)).lastIndexOf(true);
    expect(lastFrom, `${file} has no FROM`).toBeGreaterThanOrEqual(0);
    const finalStage = lines.slice(lastFrom);
    const users = finalStage.filter((l) => /^USER\s/i.test(l));
    expect(
      users.length,
      `${file}: no USER in the final stage (it would run as root)`,
    ).toBeGreaterThan(0);
    const user = (users[users.length - 1] as string).replace(/^USER\s+/i, '').trim();
    const [name = '', group = ''] = user.split(':');
    expect(['root', '0'], `${file}: USER ${user}`).not.toContain(name);
    expect(['root', '0'], `${file}: USER ${user} (group)`).not.toContain(group);
  });
});
