// "Does the live object already say what we want?" — the check that lets a no-op reconcile write
// nothing. The desired object must be a subset of the live one: every field we set has the same
// value there; fields the API server defaulted or other managers own are ignored. Lists of
// objects keyed by `name` (containers, env, ports, volumes) or `type` (conditions) are matched by
// key; other lists element by element. Resource quantities compare by value ("0.5" == "500m").
import { createHash } from 'node:crypto';

const MERGE_KEYS = ['name', 'type'] as const;

const QUANTITY = /^([+-]?[0-9.]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
const MULTIPLIER: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a Kubernetes quantity ("250m", "64Mi", "1e3" is not supported), or undefined. */
export function quantityValue(q: string): number | undefined {
  const m = QUANTITY.exec(q);
  if (m === null) return undefined;
  const n = Number(m[1]);
  const mult = MULTIPLIER[m[2] ?? ''];
  return Number.isFinite(n) && mult !== undefined ? n * mult : undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isEmpty(v: unknown): boolean {
  return (
    v === undefined ||
    v === null ||
    (Array.isArray(v) && v.length === 0) ||
    (isPlainObject(v) && Object.keys(v).length === 0)
  );
}

/** True when every field of `desired` has the same value in `actual` (see the file comment). */
export function isSubset(desired: unknown, actual: unknown, path: readonly string[] = []): boolean {
  if (desired === undefined) return true;
  if (isEmpty(desired) && isEmpty(actual)) return true;
  if (isPlainObject(desired)) {
    if (!isPlainObject(actual)) return false;
    return Object.entries(desired).every(([k, v]) => isSubset(v, actual[k], [...path, k]));
  }
  if (Array.isArray(desired)) {
    if (!Array.isArray(actual)) return false;
    const mergeKey = MERGE_KEYS.find(
      (k) =>
        desired.length > 0 && desired.every((d) => isPlainObject(d) && typeof d[k] === 'string'),
    );
    if (mergeKey !== undefined) {
      const byKey = new Map<unknown, unknown>();
      for (const a of actual) if (isPlainObject(a)) byKey.set(a[mergeKey], a);
      return desired.every(
        (d) =>
          isPlainObject(d) && byKey.has(d[mergeKey]) && isSubset(d, byKey.get(d[mergeKey]), path),
      );
    }
    return (
      desired.length === actual.length && desired.every((d, i) => isSubset(d, actual[i], path))
    );
  }
  if (desired === actual) return true;
  if (
    typeof desired === 'string' &&
    typeof actual === 'string' &&
    (path.includes('limits') || path.includes('requests'))
  ) {
    const a = quantityValue(desired);
    return a !== undefined && a === quantityValue(actual);
  }
  return false;
}

/** JSON with object keys sorted, so that equal objects hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** First 16 hex digits of SHA-256 over the canonical JSON. */
export function contentHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 16);
}
