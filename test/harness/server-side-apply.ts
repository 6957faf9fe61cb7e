// Server-side apply's merge rules for the in-memory KubeClient, as far as the operator relies on
// them (kube-client-contract.ts checks them against a real API server): maps merge, lists keyed by
// name merge element by element for a second manager, and what a manager applied before and
// leaves out now is removed.

function clone<T>(v: T): T {
  return structuredClone(v);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export type Json = Record<string, unknown>;
const byName = (list: unknown[]): Map<unknown, Json> =>
  new Map(list.filter(isPlainObject).map((e) => [e['name'], e]));
const isNamedList = (v: unknown): v is Json[] =>
  Array.isArray(v) &&
  v.length > 0 &&
  v.every((e) => isPlainObject(e) && typeof e['name'] === 'string');

/**
 * Server-side apply's rule for one field manager, as far as the operator relies on it: what
 * the manager applied before and leaves out now is removed from the live object (a field, or an
 * element of a list keyed by name), the rest of the object untouched. Co-ownership is not modelled.
 */
export function release(live: Json, before: Json, now: Json | undefined): void {
  for (const [k, was] of Object.entries(before)) {
    const next = now?.[k];
    const cur = live[k];
    if (isPlainObject(was) && isPlainObject(cur)) {
      release(cur, was, isPlainObject(next) ? next : undefined);
      if (Object.keys(cur).length === 0) delete live[k];
    } else if (isNamedList(was) && Array.isArray(cur)) {
      const kept = Array.isArray(next) ? byName(next) : new Map();
      const wasByName = byName(was);
      const out = cur.filter(
        (e) => !(isPlainObject(e) && wasByName.has(e['name']) && !kept.has(e['name'])),
      );
      for (const e of out)
        if (isPlainObject(e) && wasByName.has(e['name']))
          release(e, wasByName.get(e['name']) ?? {}, kept.get(e['name']));
      if (out.length === 0) delete live[k];
      else live[k] = out;
    } else if (next === undefined) {
      delete live[k];
    }
  }
}

/** Like merge, but lists keyed by name merge element by element (server-side apply's list-map). */
export function mergeKeyed(base: unknown, patch: unknown): unknown {
  if (isNamedList(base) && isNamedList(patch)) {
    const out = base.map((e) => clone(e));
    for (const p of patch) {
      const i = out.findIndex((e) => e['name'] === p['name']);
      if (i < 0) out.push(clone(p));
      else out[i] = mergeKeyed(out[i], p) as Json;
    }
    return out;
  }
  if (!isPlainObject(base) || !isPlainObject(patch)) return clone(patch);
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(patch)) out[k] = mergeKeyed(base[k], v);
  return out;
}

export function merge(base: unknown, patch: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(patch)) return clone(patch);
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(patch)) out[k] = v === null ? undefined : merge(base[k], v);
  return out;
}
