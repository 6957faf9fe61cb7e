// The gRPC front door's own framing on a real HTTP/2 connection: another method is UNIMPLEMENTED,
// a body that is not one length-prefixed message is INVALID_ARGUMENT, a compressed one
// UNIMPLEMENTED; each a trailers-only answer, the limiter never asked.
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Admission } from '../../sidecar/admission.ts';
import { buildDecisionGrpcServer } from '../../sidecar/decision-grpc.ts';

let server: http2.Http2Server;
let client: http2.ClientHttp2Session;
let asked = 0;

beforeAll(async () => {
  server = buildDecisionGrpcServer({
    logger: pino({ level: 'silent' }),
    admission: new Admission(pino({ level: 'silent' })),
    runtime: () => {
      asked++;
      throw new Error('not to be asked');
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

afterAll(async () => {
  client.close();
  await new Promise((resolve) => server.close(resolve));
});

function call(path: string, body: Buffer): Promise<http2.IncomingHttpHeaders> {
  return new Promise((resolve, reject) => {
    const req = client.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    req.on('response', (headers) => resolve(headers));
    req.on('error', reject);
    req.resume();
    req.end(body);
  });
}

const framed = (flag: number, message: Buffer) =>
  Buffer.concat([Buffer.from([flag]), Buffer.from([0, 0, 0, message.length]), message]);

describe('gRPC framing of the decision service', () => {
  it('another method: UNIMPLEMENTED', async () => {
    expect(
      (await call('/envoy.service.auth.v2.Authorization/Check', framed(0, Buffer.alloc(0))))[
        'grpc-status'
      ],
    ).toBe('12');
  });

  it('a body that is not one length-prefixed message: INVALID_ARGUMENT', async () => {
    expect(
      (await call('/envoy.service.auth.v3.Authorization/Check', Buffer.from([0, 0, 0])))[
        'grpc-status'
      ],
    ).toBe('3');
    expect(
      (await call('/envoy.service.auth.v3.Authorization/Check', Buffer.from([0, 0, 0, 0, 9, 1])))[
        'grpc-status'
      ],
    ).toBe('3');
  });

  it('not protobuf: INVALID_ARGUMENT; compressed: UNIMPLEMENTED', async () => {
    expect(
      (
        await call(
          '/envoy.service.auth.v3.Authorization/Check',
          framed(0, Buffer.from([0xff, 0xff, 0xff])),
        )
      )['grpc-status'],
    ).toBe('3');
    expect(
      (await call('/envoy.service.auth.v3.Authorization/Check', framed(1, Buffer.from([1, 2]))))[
        'grpc-status'
      ],
    ).toBe('12');
    expect(asked).toBe(0);
  });
});
