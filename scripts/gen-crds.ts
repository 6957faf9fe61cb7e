// `make crds`: writes crds/*.yaml from the zod schemas in operator/api, copies them into the
// chart (charts/portcullis/crds/, which helm installs once and never upgrades) and writes the
// same CRDs as one chart template (charts/portcullis/templates/crds.yaml, rendered only with
// crds.enabled, so that helm upgrade upgrades them). `make check-generated` (--check): fails,
// naming each stale file and its first differing lines, when a committed file differs from what
// would be written.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { crdSources } from '../operator/api/index.ts';
import { buildCrd, crdName, GENERATED_HEADER } from './crds/build-crd.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT_DIRS = ['crds', path.join('charts', 'portcullis', 'crds')];
/** Files this generator owns in each output directory. */
const OWNED = /^portcullis\.dev_.*\.yaml$/;

export function renderCrds(): Map<string, string> {
  const files = new Map<string, string>();
  for (const source of crdSources) {
    const [plural, ...group] = crdName(source).split('.');
    const text =
      GENERATED_HEADER +
      stringify(buildCrd(source), { lineWidth: 0, aliasDuplicateObjects: false });
    files.set(`${group.join('.')}_${plural}.yaml`, text);
  }
  return files;
}

/** The chart template of the CRDs, relative to the repository root. */
export const CRD_TEMPLATE = path.join('charts', 'portcullis', 'templates', 'crds.yaml');

/**
 * The CRDs as a chart template: each exactly as in crds/, rendered only with crds.enabled, and
 * with crds.keep annotated helm.sh/resource-policy: keep (helm uninstall then leaves them, and
 * with them every RateLimitRoute and OAuthClient in the cluster).
 */
export function renderCrdTemplate(crds: Map<string, string> = renderCrds()): string {
  const docs = [...crds.values()].map((text) => {
    const body = text.slice(GENERATED_HEADER.length);
    if (body.includes('{{') || body.includes('}}'))
      throw new Error('a CRD contains "{{" or "}}", which helm would read as a template action');
    if (!body.includes('\nmetadata:\n')) throw new Error('a CRD has no top-level metadata');
    return body.replace(
      '\nmetadata:\n',
      '\nmetadata:\n  {{- if .Values.crds.keep }}\n  annotations:\n    helm.sh/resource-policy: keep\n  {{- end }}\n',
    );
  });
  return `${GENERATED_HEADER}{{- if .Values.crds.enabled }}\n${docs.join('---\n')}{{- end }}\n`;
}

function firstDifference(want: string, have: string): string {
  const a = want.split('\n');
  const b = have.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i])
      return `  line ${i + 1}:\n    committed: ${b[i] ?? '(end of file)'}\n    generated: ${a[i] ?? '(end of file)'}`;
  }
  return '';
}

function main(): void {
  const check = process.argv.includes('--check');
  const files = renderCrds();
  const problems: string[] = [];
  for (const dir of OUT_DIRS) {
    const abs = path.join(ROOT, dir);
    const existing = existsSync(abs) ? readdirSync(abs).filter((f) => OWNED.test(f)) : [];
    for (const stale of existing.filter((f) => !files.has(f))) {
      if (check)
        problems.push(`${dir}/${stale}: no longer generated (a kind was removed or renamed)`);
      else rmSync(path.join(abs, stale));
    }
    for (const [name, text] of files) {
      const file = path.join(abs, name);
      const have = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
      if (have === text) continue;
      if (check) {
        problems.push(
          have === undefined
            ? `${dir}/${name}: missing`
            : `${dir}/${name}: out of date\n${firstDifference(text, have)}`,
        );
      } else {
        mkdirSync(abs, { recursive: true });
        writeFileSync(file, text);
        console.log(`crds: wrote ${dir}/${name}`);
      }
    }
  }
  const template = renderCrdTemplate(files);
  const templateFile = path.join(ROOT, CRD_TEMPLATE);
  const haveTemplate = existsSync(templateFile) ? readFileSync(templateFile, 'utf8') : undefined;
  if (haveTemplate !== template) {
    if (check)
      problems.push(
        haveTemplate === undefined
          ? `${CRD_TEMPLATE}: missing`
          : `${CRD_TEMPLATE}: out of date\n${firstDifference(template, haveTemplate)}`,
      );
    else {
      writeFileSync(templateFile, template);
      console.log(`crds: wrote ${CRD_TEMPLATE}`);
    }
  }
  if (problems.length > 0) {
    console.error(
      `check-generated: the CRDs differ from operator/api:\n${problems.join('\n')}\nRun \`make crds\` and commit crds/, charts/portcullis/crds/ and ${CRD_TEMPLATE}.`,
    );
    process.exit(1);
  }
  if (check)
    console.log(
      `check-generated: crds/, charts/portcullis/crds/ and ${CRD_TEMPLATE} match operator/api (${files.size} CRDs)`,
    );
}

if (
  process.argv[1] !== undefined &&
  path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)
)
  main();
