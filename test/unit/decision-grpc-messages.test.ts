// The gRPC front door's reading of CheckRequests and writing of CheckResponses, over the wire
// format (encode, decode): headers from the `headers` map or from `header_map` (Envoy's
// encode_raw_headers), the key header whatever its case, and the denied response's gRPC code,
// HTTP status, headers and body. The integration tier holds the same to Envoy's published API.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  checkRequestOf,
  checkResponseOf,
  isCheckRequest,
} from '../../sidecar/ext-authz-messages.ts';
import { CheckRequestType, CheckResponseType } from '../../sidecar/ext-authz-proto.ts';

const wire = (http: Record<string, unknown>) =>
  CheckRequestType.decode(
    CheckRequestType.encode(
      CheckRequestType.fromObject({ attributes: { request: { http } } }),
    ).finish(),
  );
/** What the front door reads of a decoded message, which the guard must accept first. */
const readDecoded = (message: unknown) => {
  if (!isCheckRequest(message)) throw new Error('the guard refused a CheckRequest');
  return checkRequestOf(message, 'user-id');
};
const read = (http: Record<string, unknown>) => readDecoded(wire(http));

describe('CheckRequest', () => {
  it('reads method, path with query and the key header from the headers map', () => {
    expect(
      read({
        method: 'POST',
        path: '/orders?page=2',
        headers: { 'USER-ID': 'alice', authorization: 'Bearer x' },
      }),
    ).toEqual({
      method: 'POST',
      target: '/orders?page=2',
      keyValue: 'alice',
      authorization: 'Bearer x',
    });
  });

  it('reads raw headers (header_map with raw_value) when Envoy sends them so', () => {
    expect(
      read({
        method: 'GET',
        path: '/a',
        header_map: { headers: [{ key: 'user-id', raw_value: Buffer.from('bob') }] },
      }).keyValue,
    ).toBe('bob');
  });

  it('an empty request has no key and an empty target (refused as not origin-form)', () => {
    expect(readDecoded(CheckRequestType.decode(Buffer.alloc(0)))).toEqual({
      method: 'GET',
      target: '',
      keyValue: undefined,
      authorization: undefined,
    });
  });
});

describe('CheckRequest guard', () => {
  // The guard replaced this schema (a parse per Check cost more than the rest of its JavaScript):
  // it must reject every shape the schema rejected and accept every shape it accepted.
  const schema = z.object({
    attributes: z
      .object({
        request: z
          .object({
            http: z
              .object({
                method: z.string().optional(),
                path: z.string().optional(),
                headers: z.record(z.string(), z.string()).optional(),
                header_map: z
                  .object({
                    headers: z
                      .array(
                        z.object({
                          key: z.string(),
                          value: z.string().optional(),
                          raw_value: z.instanceof(Uint8Array).optional(),
                        }),
                      )
                      .optional(),
                  })
                  .nullish(),
              })
              .nullish(),
          })
          .nullish(),
      })
      .nullish(),
  });
  const inHttp = (http: unknown) => ({ attributes: { request: { http } } });
  const nullProto = Object.assign(Object.create(null) as Record<string, string>, {
    'user-id': 'a',
  });
  const cases: [string, unknown][] = [
    ['null', null],
    ['undefined', undefined],
    ['a string', 'x'],
    ['an array', []],
    ['empty', {}],
    ['attributes null', { attributes: null }],
    ['attributes a number', { attributes: 1 }],
    ['attributes an array', { attributes: [] }],
    ['request a string', { attributes: { request: 'x' } }],
    ['request null', { attributes: { request: null } }],
    ['http a number', inHttp(1)],
    ['http null', inHttp(null)],
    ['http empty', inHttp({})],
    ['method null', inHttp({ method: null })],
    ['method a number', inHttp({ method: 1 })],
    ['path a number', inHttp({ path: 5 })],
    ['path null', inHttp({ path: null })],
    ['headers null', inHttp({ headers: null })],
    ['headers an array', inHttp({ headers: ['a'] })],
    ['headers a Map', inHttp({ headers: new Map([['a', 'b']]) })],
    ['headers an instance of a class', inHttp({ headers: new (class {})() })],
    ['headers with a number value', inHttp({ headers: { a: 'b', c: 1 } })],
    ['headers with a symbol key', inHttp({ headers: { [Symbol('s')]: 'x' } })],
    ['headers without a prototype', inHttp({ headers: nullProto })],
    ['headers of strings', inHttp({ headers: { a: 'b' } })],
    ['header_map a string', inHttp({ header_map: 'x' })],
    ['header_map null', inHttp({ header_map: null })],
    ['header_map.headers null', inHttp({ header_map: { headers: null } })],
    ['header_map.headers an object', inHttp({ header_map: { headers: {} } })],
    ['header_map entry null', inHttp({ header_map: { headers: [null] } })],
    ['header_map key a number', inHttp({ header_map: { headers: [{ key: 1 }] } })],
    ['header_map key absent', inHttp({ header_map: { headers: [{ value: 'v' }] } })],
    ['header_map value null', inHttp({ header_map: { headers: [{ key: 'a', value: null }] } })],
    [
      'header_map raw_value a string',
      inHttp({ header_map: { headers: [{ key: 'a', raw_value: 'x' }] } }),
    ],
    [
      'header_map raw_value bytes',
      inHttp({ header_map: { headers: [{ key: 'a', raw_value: new Uint8Array([1]) }] } }),
    ],
    [
      'header_map raw_value a Buffer',
      inHttp({ header_map: { headers: [{ key: 'a', value: 'v', raw_value: Buffer.from('x') }] } }),
    ],
    [
      'a decoded CheckRequest',
      wire({
        method: 'GET',
        path: '/a',
        headers: { a: 'b' },
        header_map: { headers: [{ key: 'k', raw_value: Buffer.from('v') }] },
      }),
    ],
    ['an empty decoded CheckRequest', CheckRequestType.decode(Buffer.alloc(0))],
  ];

  it.each(cases)('%s: as the schema decided', (_name, message) => {
    expect(isCheckRequest(message)).toBe(schema.safeParse(message).success);
  });

  it('rejects the shapes a CheckRequest cannot have', () => {
    const rejected = cases.filter(([, m]) => !schema.safeParse(m).success).map(([name]) => name);
    expect(rejected.length).toBeGreaterThan(20);
    for (const [name, m] of cases)
      if (rejected.includes(name)) expect(isCheckRequest(m)).toBe(false);
  });
});

describe('CheckResponse', () => {
  const roundTrip = (o: Record<string, unknown>) =>
    CheckResponseType.toObject(CheckResponseType.decode(CheckResponseType.encode(o).finish()), {
      defaults: true,
      oneofs: true,
    });

  it('admitted: OK with the headers for upstream (overwriting) and for the client', () => {
    const r = roundTrip(
      checkResponseOf({
        allowed: true,
        upstreamHeaders: ['ratelimit', 'r', 'user-id', 'sub-1'],
        removeHeaders: ['user_id'],
        clientHeaders: ['ratelimit', 'r'],
      }),
    );
    expect(r['status']).toMatchObject({ code: 0 });
    expect(r['http_response']).toBe('ok_response');
    expect(r['ok_response']).toMatchObject({
      headers: [
        { header: { key: 'ratelimit', value: 'r' }, append_action: 2 },
        { header: { key: 'user-id', value: 'sub-1' }, append_action: 2 },
      ],
      headers_to_remove: ['user_id'],
      response_headers_to_add: [{ header: { key: 'ratelimit', value: 'r' } }],
    });
  });

  it.each([
    [429, 8],
    [400, 3],
    [401, 16],
    [404, 5],
    [503, 14],
  ])(
    'refused with %i: gRPC code %i, the HTTP status, the headers with content-type and the body',
    (status, code) => {
      const r = roundTrip(
        checkResponseOf({
          allowed: false,
          problem: { status, title: 't', type: 'x', detail: 'd' },
          headers: ['retry-after', '3'],
          body: '{"status":1}',
        }),
      );
      expect(r['status']).toMatchObject({ code });
      expect(r['denied_response']).toMatchObject({
        status: { code: status },
        headers: [
          { header: { key: 'retry-after', value: '3' } },
          { header: { key: 'content-type', value: 'application/problem+json' } },
          { header: { key: 'cache-control', value: 'no-store' } },
        ],
        body: '{"status":1}',
      });
    },
  );
});
