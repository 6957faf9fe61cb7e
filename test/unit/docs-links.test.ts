// Every relative link in README.md and docs/**/*.md resolves: the file exists and, for a
// #fragment into Markdown, a heading with that anchor (as GitHub derives it) exists there. Moving
// or renaming a document or a heading cannot break a link silently.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? markdownFiles(join(dir, e.name))
      : e.name.endsWith('.md')
        ? [join(dir, e.name)]
        : [],
  );
}

/** The text outside fenced code blocks and inline code spans (a `# comment` in a shell block is no heading). */
function prose(text: string): string {
  return text
    .replace(/^ {0,3}(```|~~~)[^\n]*\n[\s\S]*?^ {0,3}\1[^\n]*$/gm, '')
    .replace(/`[^`\n]*`/g, (span) => (span.startsWith('``') ? span : 'code'));
}

/** GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to dashes. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor of a Markdown file, repeated headings numbered as GitHub does (-1, -2, ...). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const withoutFences = text.replace(/^ {0,3}(```|~~~)[^\n]*\n[\s\S]*?^ {0,3}\1[^\n]*$/gm, '');
  for (const [, heading] of withoutFences.matchAll(/^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(heading ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const [, id] of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(id ?? '');
  return out;
}

/** Relative link targets of a Markdown text: inline links and images, and reference definitions. */
function links(text: string): string[] {
  const body = prose(text);
  const inline = [...body.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (m) => m[1] ?? '',
  );
  const defined = [...body.matchAll(/^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+"[^"]*")?$/gm)].map(
    (m) => m[1] ?? '',
  );
  return [...inline, ...defined].filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** What is wrong with `target`, linked from `file`; undefined when it resolves. */
function problem(file: string, target: string): string | undefined {
  const [path = '', fragment] = target.split('#', 2);
  const to = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
  if (!existsSync(to)) return 'no such file';
  if (
    fragment === undefined ||
    fragment === '' ||
    !to.endsWith('.md') ||
    statSync(to).isDirectory()
  )
    return undefined;
  return anchors(readFileSync(to, 'utf8')).has(decodeURIComponent(fragment).toLowerCase())
    ? undefined
    : 'no such heading';
}

describe('links in the docs', () => {
  it('headings give the anchors GitHub gives them', () => {
    const text =
      '# Gateway: the sidecar\n## Why 12 of 30\n### nginx (`auth_request`)\n## Tests\n```sh\n# not a heading\n```\n## Tests\n';
    expect([...anchors(text)]).toEqual([
      'gateway-the-sidecar',
      'why-12-of-30',
      'nginx-auth_request',
      'tests',
      'tests-1',
    ]);
    expect(
      links('[a](b.md#c) `[x](y.md)` [d](https://e.example) ![i](img.png)\n[ref]: ../f.md\n'),
    ).toEqual(['b.md#c', 'img.png', '../f.md']);
  });

  const files = [join(root, 'README.md'), ...markdownFiles(join(root, 'docs'))];
  it.each(files.map((f) => [relative(root, f)]))('%s: every relative link resolves', (file) => {
    const from = join(root, file);
    const broken = links(readFileSync(from, 'utf8'))
      .map((target) => ({ target, problem: problem(from, target) }))
      .filter((l) => l.problem !== undefined);
    expect(broken).toEqual([]);
  });
});
