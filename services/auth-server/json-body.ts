// JSON request bodies that keep repeated keys. JSON.parse keeps only the last value of a repeated
// key, so `{"code":"bogus","code":"real"}` would pass as one code while the same form body is
// refused (RFC 6749 3.1: no parameter more than once). Here a top-level key that occurs more than
// once becomes an array of its values, the shape the form parser gives a repeated parameter, so
// bodyParams refuses both alike. fastify's own JSON parser still does the parsing (empty bodies,
// syntax errors, __proto__ and constructor poisoning); this only looks again at its input text.
import type { FastifyBodyParser, FastifyInstance } from 'fastify';

function skipSpace(text: string, i: number): number {
  let j = i;
  while (
    j < text.length &&
    (text[j] === ' ' || text[j] === '\t' || text[j] === '\n' || text[j] === '\r')
  )
    j++;
  return j;
}

/** Index just past the string literal starting at i (text[i] is the opening quote). */
function endOfString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === '\\') j++;
    else if (text[j] === '"') return j + 1;
  }
  return text.length;
}

/** Index of the `,` or `}` that ends the member value starting at i. */
function endOfValue(text: string, i: number): number {
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (c === '"') j = endOfString(text, j) - 1;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (depth === 0) return j;
      depth--;
    } else if (c === ',' && depth === 0) return j;
  }
  return text.length;
}

/**
 * The members of a top-level JSON object in order, keys decoded (`"\u0063ode"` is `code`), values
 * as their JSON text. `text` must already be valid JSON whose top level is an object.
 */
export function objectMembers(text: string): [key: string, valueText: string][] {
  const members: [string, string][] = [];
  // fastify's parser accepts a leading byte order mark.
  let i = skipSpace(text, text.charCodeAt(0) === 0xfeff ? 1 : 0) + 1; // past '{'
  i = skipSpace(text, i);
  while (i < text.length && text[i] === '"') {
    const keyEnd = endOfString(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    const valueStart = skipSpace(text, skipSpace(text, keyEnd) + 1); // past ':'
    const valueEnd = endOfValue(text, valueStart);
    members.push([key, text.slice(valueStart, valueEnd).trimEnd()]);
    i = text[valueEnd] === ',' ? skipSpace(text, valueEnd + 1) : text.length;
  }
  return members;
}

/** `parsed` (JSON.parse of `text`) with each repeated top-level key holding all its values in order. */
export function keepRepeatedKeys(text: string, parsed: unknown): unknown {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return parsed;
  const members = objectMembers(text);
  if (members.length === Object.keys(parsed).length) return parsed;
  const values = new Map<string, unknown[]>();
  for (const [key, valueText] of members) {
    const list = values.get(key);
    if (list === undefined) values.set(key, [JSON.parse(valueText)]);
    else list.push(JSON.parse(valueText));
  }
  const result: Record<string, unknown> = { ...parsed };
  for (const [key, list] of values) if (list.length > 1) result[key] = list;
  return result;
}

/** Replaces the app's application/json parser with fastify's default one followed by keepRepeatedKeys. */
export function parseJsonKeepingRepeatedKeys(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  const parser: FastifyBodyParser<string> = (request, body, done) => {
    parseJson(request, body, (err, value) => {
      if (err !== null) {
        done(err, undefined);
        return;
      }
      let kept: unknown;
      try {
        kept = keepRepeatedKeys(body, value);
      } catch {
        // Not expected for text JSON.parse accepted; still a client error, never a 500.
        done(
          Object.assign(new Error('the JSON body could not be read'), { statusCode: 400 }),
          undefined,
        );
        return;
      }
      done(null, kept);
    });
  };
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parser);
}
