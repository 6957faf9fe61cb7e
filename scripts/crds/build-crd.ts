// Pure: a CrdSource (zod schemas + names, operator/api) -> a CustomResourceDefinition object.
// zod 4's z.toJSONSchema gives JSON Schema; the API server wants a *structural* OpenAPI v3
// schema: a type on every node, no additionalProperties beside properties, no $ref, no
// keywords it does not know. toStructural rewrites the one into the other and throws on anything
// it cannot express, so a new zod feature fails `make crds` instead of producing a CRD that the
// API server rejects (or, worse, silently prunes).
import { z } from 'zod';
import { GROUP, VERSION, type CrdSource } from '../../operator/api/index.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type SchemaNode = { [key: string]: Json };

/** Keywords of the API server's JSONSchemaProps that we emit (the rest are refused). */
const ALLOWED = new Set([
  'type',
  'description',
  'properties',
  'required',
  'items',
  'enum',
  'default',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'additionalProperties',
  'nullable',
  'anyOf',
]);
/** Formats the API server validates; others would be accepted silently and mean nothing. */
const FORMATS = new Set([
  'uri',
  'date-time',
  'date',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'cidr',
  'uuid',
  'byte',
  'int32',
  'int64',
  'duration',
]);
/** JSON Schema keywords that carry no meaning for the API server and are dropped. */
const DROPPED = new Set(['$schema', 'propertyNames', 'id', '$id', 'title']);

function isNode(v: Json | undefined): v is SchemaNode {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** JSON Schema from zod -> structural OpenAPI v3 schema. `where` names the node in errors. */
export function toStructural(input: SchemaNode, where = '$'): SchemaNode {
  if ('$ref' in input || '$defs' in input || 'definitions' in input) {
    throw new Error(
      `${where}: $ref/$defs cannot appear in a CRD schema (define the schema inline, without .meta({id}))`,
    );
  }
  if (input['x-kubernetes-int-or-string'] === true) {
    // The one shape of anyOf the API server accepts next to the int-or-string marker, so the
    // branches keep no bounds of their own. The string branch's pattern moves up beside it (as
    // controller-gen emits resource.Quantity): a pattern applies to strings only, so integers
    // still pass, and the API server refuses e.g. "lots" for a quantity as the operator would.
    const out: SchemaNode = {
      'x-kubernetes-int-or-string': true,
      anyOf: [{ type: 'integer' }, { type: 'string' }],
    };
    if (typeof input['description'] === 'string') out['description'] = input['description'];
    const branches = Array.isArray(input['anyOf']) ? input['anyOf'] : [];
    const patterns = branches
      .filter(isNode)
      .map((b) => b['pattern'])
      .filter((p) => typeof p === 'string');
    if (patterns.length > 1)
      throw new Error(`${where}: an int-or-string field can carry one pattern only`);
    if (patterns[0] !== undefined) out['pattern'] = patterns[0];
    return out;
  }
  const out: SchemaNode = {};
  for (const [key, value] of Object.entries(input)) {
    if (DROPPED.has(key)) continue;
    if (key.startsWith('x-kubernetes-')) {
      out[key] = value;
      continue;
    }
    if (!ALLOWED.has(key))
      throw new Error(`${where}: keyword "${key}" has no equivalent in a CRD schema`);
    if (key === 'anyOf' || key === 'oneOf' || key === 'allOf') {
      throw new Error(
        `${where}: unions are not structural; use an object with optional fields and a CEL rule instead`,
      );
    }
    out[key] = value;
  }
  if (out['format'] !== undefined) {
    if (typeof out['format'] !== 'string' || !FORMATS.has(out['format']))
      throw new Error(
        `${where}: format ${JSON.stringify(out['format'])} is not one the API server knows`,
      );
    // zod adds a regex mirroring the format (long for date-time); the API server checks the format itself.
    if (out['format'] === 'date-time') delete out['pattern'];
  }
  if (isNode(out['properties'])) {
    const props: SchemaNode = {};
    for (const [name, child] of Object.entries(out['properties'])) {
      if (!isNode(child)) throw new Error(`${where}.${name}: not a schema`);
      props[name] = toStructural(child, `${where}.${name}`);
    }
    out['properties'] = props;
    // Structural: no additionalProperties beside properties. Unknown fields are pruned by the
    // API server, or rejected with the default strict field validation of kubectl and SSA.
    delete out['additionalProperties'];
    if (Array.isArray(out['required']) && out['required'].length === 0) delete out['required'];
  } else if (out['additionalProperties'] === false) {
    delete out['additionalProperties'];
  } else if (isNode(out['additionalProperties'])) {
    out['additionalProperties'] = toStructural(out['additionalProperties'], `${where}[*]`);
  }
  if (isNode(out['items'])) out['items'] = toStructural(out['items'], `${where}[]`);
  if (out['type'] === undefined)
    throw new Error(`${where}: every node of a structural schema needs a type`);
  if (
    out['type'] === 'string' &&
    out['maxLength'] === undefined &&
    out['enum'] === undefined &&
    out['format'] !== 'date-time'
  ) {
    throw new Error(`${where}: strings need a maximum length (CEL cost budget, and bounded input)`);
  }
  if (out['type'] === 'array' && out['maxItems'] === undefined)
    throw new Error(`${where}: lists need a maximum number of items`);
  if (
    out['type'] === 'object' &&
    isNode(out['additionalProperties']) &&
    out['maxProperties'] === undefined
  ) {
    throw new Error(`${where}: maps need maxProperties`);
  }
  return ordered(out);
}

/** type and description first, the rest in zod's order: reads well in the generated YAML. */
const FIRST = ['type', 'x-kubernetes-int-or-string', 'description'];
function ordered(node: SchemaNode): SchemaNode {
  const out: SchemaNode = {};
  for (const key of FIRST) if (node[key] !== undefined) out[key] = node[key];
  for (const [key, value] of Object.entries(node)) if (!FIRST.includes(key)) out[key] = value;
  return out;
}

/** The zod schema as JSON Schema in the form the API server reads ("input": defaults optional). */
export function jsonSchemaOf(schema: z.ZodType): SchemaNode {
  const js = z.toJSONSchema(schema, {
    io: 'input',
    target: 'openapi-3.0',
    unrepresentable: 'throw',
  }) as SchemaNode;
  return js;
}

export const GENERATED_HEADER =
  '# Generated by scripts/gen-crds.ts from operator/api (zod schemas): do not edit, run `make crds`.\n';

export function crdName(source: CrdSource): string {
  return `${source.plural}.${GROUP}`;
}

export function buildCrd(source: CrdSource): SchemaNode {
  const spec = toStructural(jsonSchemaOf(source.spec), `${source.kind}.spec`);
  const status = toStructural(jsonSchemaOf(source.status), `${source.kind}.status`);
  const root: SchemaNode = {
    type: 'object',
    description: source.description,
    properties: {
      apiVersion: {
        type: 'string',
        description: 'APIVersion of this object: portcullis.dev/v1alpha1.',
      },
      kind: { type: 'string', description: `Kind of this object: ${source.kind}.` },
      metadata: { type: 'object' },
      spec,
      status,
    },
    required: ['spec'],
  };
  if (source.rootValidations && source.rootValidations.length > 0) {
    root['x-kubernetes-validations'] = source.rootValidations.map((v) => ({
      rule: v.rule,
      message: v.message,
    }));
  }
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: crdName(source),
      labels: { 'app.kubernetes.io/part-of': 'portcullis' },
    },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: source.kind,
        listKind: `${source.kind}List`,
        plural: source.plural,
        singular: source.singular,
        shortNames: [...source.shortNames],
        categories: [...source.categories],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: {
            status: {},
            ...(source.scale === undefined ? {} : { scale: { ...source.scale } }),
          },
          additionalPrinterColumns: source.printerColumns.map((c) => ({
            name: c.name,
            type: c.type,
            jsonPath: c.jsonPath,
            description: c.description,
            ...(c.priority === undefined ? {} : { priority: c.priority }),
          })),
          schema: { openAPIV3Schema: root },
        },
      ],
    },
  };
}
