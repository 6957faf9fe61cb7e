// toStructural turns zod's JSON Schema into the structural OpenAPI schema a CRD needs, and
// refuses what a CRD cannot express instead of emitting something the API server rejects.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { jsonSchemaOf, toStructural } from '../../scripts/crds/build-crd.ts';

const structural = (schema: z.ZodType) => toStructural(jsonSchemaOf(schema));

describe('toStructural', () => {
  it('drops additionalProperties beside properties (strict objects) and keeps types, bounds, defaults', () => {
    const out = structural(z.strictObject({ a: z.string().max(5).default('x').describe('A') }));
    expect(out).toEqual({
      type: 'object',
      properties: { a: { type: 'string', description: 'A', default: 'x', maxLength: 5 } },
    });
  });

  it('keeps maps (additionalProperties without properties) when they are bounded', () => {
    const out = structural(
      z.record(z.string().max(10), z.string().max(10)).meta({ maxProperties: 3 }),
    );
    expect(out).toEqual({
      type: 'object',
      additionalProperties: { type: 'string', maxLength: 10 },
      maxProperties: 3,
    });
  });

  it('writes int-or-string in the one anyOf shape the API server accepts', () => {
    const out = structural(
      z
        .union([z.int(), z.string().max(9)])
        .meta({ 'x-kubernetes-int-or-string': true })
        .describe('q'),
    );
    expect(out).toEqual({
      'x-kubernetes-int-or-string': true,
      description: 'q',
      anyOf: [{ type: 'integer' }, { type: 'string' }],
    });
  });

  it("moves the string branch's pattern of an int-or-string beside the anyOf, the branches staying bare", () => {
    const out = structural(
      z
        .union([
          z.int(),
          z
            .string()
            .max(9)
            .regex(/^[0-9]+Mi$/),
        ])
        .meta({ 'x-kubernetes-int-or-string': true }),
    );
    expect(out).toEqual({
      'x-kubernetes-int-or-string': true,
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      pattern: '^[0-9]+Mi$',
    });
  });

  it('passes x-kubernetes-* extensions through (CEL rules, list types)', () => {
    const rule = { rule: 'self.a <= self.b', message: 'a <= b' };
    const out = structural(
      z.strictObject({ a: z.int(), b: z.int() }).meta({ 'x-kubernetes-validations': [rule] }),
    );
    expect(out['x-kubernetes-validations']).toEqual([rule]);
  });

  it('drops the long regex zod adds to date-time strings (the API server checks the format)', () => {
    const out = structural(z.iso.datetime());
    expect(out).toEqual({ type: 'string', format: 'date-time' });
  });

  it('refuses unbounded strings and lists, unions, and $ref', () => {
    expect(() => structural(z.strictObject({ s: z.string() }))).toThrow(
      /\$\.s: strings need a maximum length/,
    );
    expect(() => structural(z.array(z.int()))).toThrow(/lists need a maximum/);
    expect(() => structural(z.union([z.int(), z.boolean()]))).toThrow(/unions are not structural/);
    expect(() => toStructural({ $ref: '#/$defs/x' })).toThrow(/\$ref/);
    expect(() => structural(z.record(z.string().max(3), z.int()))).toThrow(
      /maps need maxProperties/,
    );
  });

  it('refuses keywords without a CRD equivalent', () => {
    expect(() => toStructural({ type: 'string', maxLength: 3, contentEncoding: 'base64' })).toThrow(
      /contentEncoding/,
    );
  });
});
