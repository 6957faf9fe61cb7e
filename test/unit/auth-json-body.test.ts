// The key scanner behind the auth server's JSON body parser: it must see every top-level key the
// way JSON.parse does (escapes decoded, nesting and strings skipped), or a repeated key slips by.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keepRepeatedKeys, objectMembers } from '../../services/auth-server/json-body.ts';

const keep = (text: string) => keepRepeatedKeys(text, JSON.parse(text.replace(/^\uFEFF/, '')));

describe('objectMembers', () => {
  it('lists the top-level members of any JSON object as JSON.parse reads them', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.constantFrom(undefined, 2, '\t'),
        (object, indent) => {
          const text = JSON.stringify(object, null, indent);
          const members = objectMembers(text);
          expect(members.map(([k]) => k)).toEqual(Object.keys(JSON.parse(text)));
          expect(Object.fromEntries(members.map(([k, v]) => [k, JSON.parse(v)]))).toEqual(
            JSON.parse(text),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('decodes escaped keys and skips strings and nesting that look like structure', () => {
    const text = ' {"a\\"b" : "x,\\"}" , "\\u0063ode":{"code":[1,{"}":"]"}]},"n":null } ';
    expect(objectMembers(text)).toEqual([
      ['a"b', '"x,\\"}"'],
      ['code', '{"code":[1,{"}":"]"}]}'],
      ['n', 'null'],
    ]);
    expect(objectMembers('{}')).toEqual([]);
  });
});

describe('keepRepeatedKeys', () => {
  it('turns a repeated top-level key into the list of its values, in order', () => {
    expect(keep('{"code":"bogus","grant_type":"x","code":"real"}')).toEqual({
      code: ['bogus', 'real'],
      grant_type: 'x',
    });
    expect(keep('{"code":"a","\\u0063ode":"b","code":"c"}')).toEqual({ code: ['a', 'b', 'c'] });
    expect(keep('\uFEFF{"t":"a","t":"b"}')).toEqual({ t: ['a', 'b'] });
  });

  it('leaves bodies without repeats, nested repeats and non-objects as JSON.parse returns them', () => {
    expect(keep('{"code":"a","state":"b"}')).toEqual({ code: 'a', state: 'b' });
    expect(keep('{"a":{"b":1,"b":2}}')).toEqual({ a: { b: 2 } });
    expect(keep('[1,1]')).toEqual([1, 1]);
    expect(keep('"text"')).toBe('text');
    expect(keep('null')).toBeNull();
  });
});
