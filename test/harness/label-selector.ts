// Label selectors as the API server reads them in a list or watch query, for the in-memory
// KubeClient: comma-separated requirements, all of which must hold (`k`, `!k`, `k=v`, `k==v`,
// `k!=v`, `k in (a,b)`, `k notin (a,b)`). A malformed selector throws, as the server answers 400.

type Labels = Readonly<Record<string, string>>;
type Requirement = (labels: Labels) => boolean;

/** Splits on the commas outside parentheses. */
function requirements(selector: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  out.push(selector.slice(start));
  return out.map((r) => r.trim()).filter((r) => r !== '');
}

function parse(req: string): Requirement {
  const set = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(req);
  if (set !== null) {
    const [, key = '', op, list = ''] = set;
    const values = new Set(list.split(',').map((v) => v.trim()));
    return op === 'in'
      ? (l) => l[key] !== undefined && values.has(l[key])
      : (l) => l[key] === undefined || !values.has(l[key]);
  }
  const cmp = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(req);
  if (cmp !== null) {
    const [, key = '', op, value] = cmp;
    return op === '!=' ? (l) => l[key] !== value : (l) => l[key] === value;
  }
  const absent = /^!\s*(\S+)$/.exec(req);
  if (absent !== null) return (l) => l[absent[1] ?? ''] === undefined;
  if (/^[^=!\s(),]+$/.test(req)) return (l) => l[req] !== undefined;
  throw new Error(`unable to parse label selector requirement ${JSON.stringify(req)}`);
}

/** A predicate on an object's labels; undefined or empty selects everything. */
export function labelSelectorMatcher(
  selector: string | undefined,
): (labels: Labels | undefined) => boolean {
  const reqs = requirements(selector ?? '').map(parse);
  return (labels) => reqs.every((r) => r(labels ?? {}));
}
