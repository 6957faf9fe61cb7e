// What `kubectl explain` shows users: every description in the generated CRDs speaks about the
// resource, not about how this project was specified or tested.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderCrds } from '../../scripts/gen-crds.ts';

/** Wording that points at the project's own documents or test set-ups, not at the user's cluster. */
const INTERNAL = [
  /specification/i,
  /end-to-end/i,
  /\be2e\b/i,
  /\bDESIGN\.md\b/,
  /\bADR\b/,
  /\bissue\s*#?\d/i,
  /\bTODO\b/,
  /\btest tier\b/i,
  /\bunit test\b/i,
];

/** Every description in a parsed YAML document, with the path it sits at. */
function descriptions(
  node: unknown,
  where: string,
  out: [string, string][] = [],
): [string, string][] {
  if (Array.isArray(node)) node.forEach((v, i) => descriptions(v, `${where}[${i}]`, out));
  else if (typeof node === 'object' && node !== null) {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'description' && typeof v === 'string') out.push([where, v]);
      else descriptions(v, `${where}.${k}`, out);
    }
  }
  return out;
}

describe('the descriptions in the generated CRDs', () => {
  const files = [...renderCrds()];

  it.each(files)('%s: none cites an internal document, example or test', (_name, text) => {
    const found = descriptions(parse(text), '$');
    // The scan reaches the schema's fields and the printer columns, not just the top.
    expect(found.length).toBeGreaterThan(20);
    const offending = found
      .filter(([, d]) => INTERNAL.some((re) => re.test(d)))
      .map(([where, d]) => `${where}: ${d}`);
    expect(offending).toEqual([]);
  });

  it('would catch the wording it looks for', () => {
    const doc = {
      spec: {
        properties: {
          a: { description: 'Specification example: 20; end-to-end test: 1.' },
          b: { description: 'Tokens per second.' },
        },
      },
    };
    const flagged = descriptions(doc, '$').filter(([, d]) => INTERNAL.some((re) => re.test(d)));
    expect(flagged.map(([where]) => where)).toEqual(['$.spec.properties.a']);
  });
});
