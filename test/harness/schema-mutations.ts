// Generates malformed documents from a valid one, guided by the JSON Schema that zod derives from
// the very schema under test (z.toJSONSchema, io: input). Every mutation is one that the schema
// must reject, and each carries the field path the error message must name:
//   - a wrong JSON type at any field (string where a number goes, object where a string goes, ...)
//   - a required field removed
//   - an unknown key in a closed (strict) object
//   - an integer out of range or fractional, a string too short / too long / off its pattern,
//     a value outside an enum or const.
import fc from 'fast-check';
import { z } from 'zod';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: Json[];
  const?: Json;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minItems?: number;
  maxItems?: number;
};

export interface Mutation {
  /** What was done, for the failure message. */
  readonly what: string;
  /** Path of the field the error must name (dotted, array indices as numbers). */
  readonly path: readonly (string | number)[];
  /** A word the message must contain (the path's last segment, or the unknown key). */
  readonly mustName: string;
  readonly apply: (doc: Json) => Json;
}

const clone = (v: Json): Json => structuredClone(v);

function setAt(doc: Json, path: readonly (string | number)[], value: Json | undefined): Json {
  const copy = clone(doc);
  if (path.length === 0) return value ?? null;
  let node = copy as Record<string | number, Json>;
  for (const p of path.slice(0, -1)) node = node[p] as Record<string | number, Json>;
  const last = path[path.length - 1] as string | number;
  if (value === undefined) {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else node[last] = value;
  return copy;
}

function typesOf(s: JsonSchema): string[] {
  if (s.type === undefined) return [];
  return Array.isArray(s.type) ? s.type : [s.type];
}

/** A JSON value whose type the node does not accept (an integer field takes no fraction either). */
function wrongTypeValues(s: JsonSchema): Json[] {
  const t = typesOf(s);
  if (t.length === 0) return [];
  const candidates: [string, Json][] = [
    ['string', 'not-the-right-type'],
    ['number', 12.5],
    ['boolean', true],
    ['object', { unexpected: 1 }],
    ['array', ['x']],
    ['null', null],
  ];
  return candidates.filter(([name]) => !t.includes(name)).map(([, v]) => v);
}

/** Branch of a oneOf/anyOf whose const properties match the value (e.g. kty: EC). */
function branchFor(s: JsonSchema, value: Json): JsonSchema | undefined {
  const branches = s.oneOf ?? s.anyOf;
  if (branches === undefined) return s;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  return branches.find(
    (b) =>
      b.properties !== undefined &&
      Object.entries(b.properties).some(([k, p]) => p.const !== undefined && value[k] === p.const),
  );
}

/** Every mutation the schema must reject, for every field of `doc`. */
export interface MutationOptions {
  /** Paths (dotted) not to mutate. */
  readonly skipPaths?: RegExp;
  /**
   * The document is an environment (every value a string, numbers coerced): mutations use string
   * values only, and a wrong type means a non-numeric string in a numeric field.
   */
  readonly envStrings?: boolean;
}

export function mutationsOf(
  rootSchema: z.ZodType,
  doc: Json,
  options: MutationOptions = {},
): Mutation[] {
  const json = z.toJSONSchema(rootSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const out: Mutation[] = [];
  const visit = (schema: JsonSchema, value: Json, path: (string | number)[]) => {
    const dotted = path.join('.');
    if (options.skipPaths?.test(dotted)) return;
    const s = branchFor(schema, value);
    if (s === undefined) return; // a union of leaves (int-or-string): no single wrong type
    const name = String(path[path.length - 1] ?? '(root)');
    const at = (what: string, v: Json | undefined, p = path, mustName = name) => {
      let value = v;
      if (options.envStrings === true && value !== undefined) {
        if (typeof value === 'number') value = String(value);
        else if (typeof value !== 'string') return;
      }
      out.push({
        what: `${what} at ${p.join('.') || '(root)'}`,
        path: p,
        mustName,
        apply: (d) => setAt(d, p, value),
      });
    };

    const numeric = typesOf(s).some((x) => x === 'integer' || x === 'number');
    if (path.length > 0) {
      if (options.envStrings !== true)
        for (const w of wrongTypeValues(s)) at(`wrong type ${JSON.stringify(w)}`, w);
      else if (numeric) at('not a number', 'not-a-number');
    }
    if (s.enum !== undefined) at('value outside the enum', '__not_in_enum__');
    if (s.const !== undefined && typeof s.const === 'string')
      at('value other than the constant', `${s.const}-x`);
    const t = typesOf(s);
    if (t.includes('integer')) at('fractional integer', 1.5);
    if (t.includes('integer') || t.includes('number')) {
      if (s.minimum !== undefined && Number.isSafeInteger(s.minimum - 1))
        at('below the minimum', s.minimum - 1);
      if (s.exclusiveMinimum !== undefined) at('at the exclusive minimum', s.exclusiveMinimum);
      if (s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER)
        at('above the maximum', s.maximum + 1);
    }
    if (t.includes('string')) {
      if (s.minLength !== undefined && s.minLength > 0) at('too short', '');
      if (s.maxLength !== undefined && s.maxLength <= 100_000)
        at('too long', 'a'.repeat(s.maxLength + 1));
      if (s.pattern !== undefined) {
        const re = new RegExp(s.pattern);
        const bad = ['', ' spaced value ', 'UPPER lower', '\u0000ctl', '#frag', '..', '/x'].find(
          (v) => !re.test(v) && (s.maxLength === undefined || v.length <= s.maxLength),
        );
        if (bad !== undefined) at(`off the pattern ${s.pattern}`, bad);
      }
      if (s.format === 'uri') at('not a URI', 'not a uri');
    }
    if (t.includes('array') && Array.isArray(value)) {
      if (s.minItems !== undefined && s.minItems > 0) at('empty list', []);
      if (s.items !== undefined)
        value.forEach((item, i) => visit(s.items as JsonSchema, item, [...path, i]));
    }
    if (
      t.includes('object') &&
      value !== null &&
      typeof value === 'object' &&
      !Array.isArray(value)
    ) {
      for (const req of s.required ?? []) {
        if (req in value) at('required field removed', undefined, [...path, req], req);
      }
      if (s.additionalProperties === false) {
        const key = 'unexpectedField';
        out.push({
          what: `unknown key at ${dotted || '(root)'}`,
          path,
          mustName: key,
          apply: (d) => setAt(d, [...path, key], 1),
        });
      }
      for (const [k, v] of Object.entries(value)) {
        const child =
          s.properties?.[k] ??
          (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
        if (child !== undefined) visit(child, v, [...path, k]);
      }
    }
  };
  visit(json, doc, []);
  return out;
}

/** fast-check arbitrary over the mutations (one or two at once). */
export function mutationArb(mutations: readonly Mutation[]): fc.Arbitrary<Mutation> {
  return fc.constantFrom(...mutations);
}

export type { Json };
