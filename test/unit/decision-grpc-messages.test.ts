// The gRPC front door's reading of CheckRequests and writing of CheckResponses, over the wire
// format (encode, decode): headers from the `headers` map or from `header_map` (Envoy's
// encode_raw_headers), the key header whatever its case, and the denied response's gRPC code,
// HTTP status, headers and body. The integration tier holds the same to Envoy's published API.
import { describe, expect, it } from 'vitest';
import { checkRequestOf, checkResponseOf, parseCheckRequest } from '../../sidecar/decision-grpc.ts';
import { CheckRequestType, CheckResponseType } from '../../sidecar/ext-authz-proto.ts';

const wire = (http: Record<string, unknown>) => CheckRequestType.decode(CheckRequestType.encode(CheckRequestType.fromObject({ attributes: { request: { http } } })).finish());
const read = (http: Record<string, unknown>) => {
  const parsed = parseCheckRequest(wire(http));
  if (parsed === undefined) throw new Error('not parsed');
  return checkRequestOf(parsed, 'user-id');
};

describe('CheckRequest', () => {
  it('reads method, path with query and the key header from the headers map', () => {
    expect(read({ method: 'POST', path: '/orders?page=2', headers: { 'USER-ID': 'alice', authorization: 'Bearer x' } })).toEqual({ method: 'POST', target: '/orders?page=2', keyValue: 'alice', authorization: 'Bearer x' });
  });

  it('reads raw headers (header_map with raw_value) when Envoy sends them so', () => {
    expect(read({ method: 'GET', path: '/a', header_map: { headers: [{ key: 'user-id', raw_value: Buffer.from('bob') }] } }).keyValue).toBe('bob');
  });

  it('an empty request has no key and an empty target (refused as not origin-form)', () => {
    expect(checkRequestOf(parseCheckRequest(CheckRequestType.decode(Buffer.alloc(0))) ?? {}, 'user-id')).toEqual({ method: 'GET', target: '', keyValue: undefined, authorization: undefined });
  });
});

describe('CheckResponse', () => {
  const roundTrip = (o: Record<string, unknown>) => CheckResponseType.toObject(CheckResponseType.decode(CheckResponseType.encode(o).finish()), { defaults: true, oneofs: true });

  it('admitted: OK with the headers for upstream (overwriting) and for the client', () => {
    const r = roundTrip(checkResponseOf({ allowed: true, upstreamHeaders: ['ratelimit', 'r', 'user-id', 'sub-1'], removeHeaders: ['user_id'], clientHeaders: ['ratelimit', 'r'] }));
    expect(r['status']).toMatchObject({ code: 0 });
    expect(r['http_response']).toBe('ok_response');
    expect(r['ok_response']).toMatchObject({
      headers: [{ header: { key: 'ratelimit', value: 'r' }, append_action: 2 }, { header: { key: 'user-id', value: 'sub-1' }, append_action: 2 }],
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
  ])('refused with %i: gRPC code %i, the HTTP status, the headers with content-type and the body', (status, code) => {
    const r = roundTrip(checkResponseOf({ allowed: false, problem: { status, title: 't', type: 'x', detail: 'd' }, headers: ['retry-after', '3'], body: '{"status":1}' }));
    expect(r['status']).toMatchObject({ code });
    expect(r['denied_response']).toMatchObject({
      status: { code: status },
      headers: [{ header: { key: 'retry-after', value: '3' } }, { header: { key: 'content-type', value: 'application/problem+json' } }, { header: { key: 'cache-control', value: 'no-store' } }],
      body: '{"status":1}',
    });
  });
});
