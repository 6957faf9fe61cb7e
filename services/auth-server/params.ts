// Request parameters from a query string, a form body or a JSON body, as one shape. Repeated
// parameters are kept as arrays so that the endpoints can reject them (RFC 6749 section 3.1:
// "Request and response parameters MUST NOT be included more than once").
import { z } from 'zod';

const paramsSchema = z.record(z.string(), z.union([z.string(), z.array(z.string())]));
export type Params = z.infer<typeof paramsSchema>;

/** undefined when the input is not a flat object of strings (e.g. JSON with numbers or nesting). */
export function toParams(input: unknown): Params | undefined {
  if (input === undefined || input === null) return {};
  const parsed = paramsSchema.safeParse(input);
  return parsed.success ? parsed.data : undefined;
}

export type Single =
  | { readonly kind: 'absent' }
  | { readonly kind: 'repeated' }
  | { readonly kind: 'value'; readonly value: string };

/** An empty value counts as absent (RFC 6749 section 3.1). */
export function single(params: Params, name: string): Single {
  const value = params[name];
  if (value === undefined || value === '') return { kind: 'absent' };
  if (Array.isArray(value))
    return value.length === 1 && value[0] !== '' && value[0] !== undefined
      ? { kind: 'value', value: value[0] }
      : { kind: 'repeated' };
  return { kind: 'value', value };
}

/** The names of parameters that occur more than once. */
export function repeatedNames(params: Params): string[] {
  return Object.entries(params)
    .filter(([, v]) => Array.isArray(v) && v.length > 1)
    .map(([k]) => k);
}
