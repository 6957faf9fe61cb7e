// The decision service's gRPC front door: envoy.service.auth.v3.Authorization/Check, what Envoy's
// ext_authz filter (grpc_service), Envoy Gateway's extAuth and Istio's CUSTOM action call.
// Admitted: status OK, the limiter's headers to add upstream (headers, overwriting: the key header
// set to the identity charged replaces what the client sent), the key header's look-alikes to
// remove (headers_to_remove) and the limiter's headers for the client's response
// (response_headers_to_add). Refused: a denied response carrying the HTTP status, the refusal's
// headers and the problem+json body, which Envoy returns to the client as they are; the gRPC
// status says why (RESOURCE_EXHAUSTED, INVALID_ARGUMENT, UNAUTHENTICATED, UNAVAILABLE...).
// One unary method over cleartext HTTP/2 (h2c, as Envoy's envoy_grpc/google_grpc clusters speak
// it to a plain backend), served by node:http2 directly: gRPC's framing of a unary call is a
// 5-byte prefix and two trailers, and a general gRPC server library cost twice the CPU of the
// whole HTTP check per Check (bench/results/decision.md).
import http2 from 'node:http2';
import type { Logger } from 'pino';
import type { Admission } from './admission.ts';
import { check, checkFailed, type CheckAnswer } from './decision.ts';
import { checkRequestOf, checkResponseOf, isCheckRequest } from './ext-authz-messages.ts';
import { CHECK_PATH, CheckRequestType, CheckResponseType } from './ext-authz-proto.ts';
import type { RouteRuntime } from './route-runtime.ts';

export interface DecisionGrpcOptions {
  readonly logger: Logger;
  readonly admission: Admission;
  /** The runtime a new check uses (swapped by reloads). */
  readonly runtime: () => RouteRuntime;
}

/** gRPC status codes used here (google.rpc.Code). */
const GRPC = {
  ok: 0,
  invalidArgument: 3,
  unimplemented: 12,
  internal: 13,
  resourceExhausted: 8,
} as const;
/** The largest CheckRequest read (bytes); Envoy's are a few KiB of headers, a body only when configured. */
const MAX_MESSAGE_BYTES = 1024 * 1024;

/** A trailers-only gRPC answer: no message, the status in the (only) headers. */
function fail(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(code),
      'grpc-message': encodeURIComponent(message),
    },
    { endStream: true },
  );
}

/** One length-prefixed gRPC message (uncompressed). */
function frame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

// Shared by every Check rather than made for each (Node copies the headers it is given).
const RESPONSE_HEADERS = { ':status': 200, 'content-type': 'application/grpc' } as const;
const OK_TRAILERS = { 'grpc-status': String(GRPC.ok), 'grpc-message': '' } as const;
const ignore = (): undefined => undefined;
function sendOkTrailers(this: http2.ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

/** A CheckResponse with status OK in the trailers (the answer's own gRPC code is in the message). */
function reply(stream: http2.ServerHttp2Stream, answer: CheckAnswer, log: Logger): void {
  if (stream.destroyed) return;
  try {
    const message = frame(CheckResponseType.encode(checkResponseOf(answer)).finish());
    stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
    stream.on('wantTrailers', sendOkTrailers);
    stream.end(message);
  } catch (err) {
    log.error({ err }, 'decision: could not answer a Check');
    fail(stream, GRPC.internal, 'internal error');
  }
}

/** An h2c server answering Authorization/Check (not listening: the caller listens). */
export function buildDecisionGrpcServer(options: DecisionGrpcOptions): http2.Http2Server {
  const { logger: log, admission, runtime } = options;
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', ignore); // a reset by the client; nothing to answer
    if (
      headers[':method'] !== 'POST' ||
      headers[':path'] !== CHECK_PATH ||
      !String(headers['content-type'] ?? '').startsWith('application/grpc')
    ) {
      fail(
        stream,
        GRPC.unimplemented,
        'only envoy.service.auth.v3.Authorization/Check is served here',
      );
      stream.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_MESSAGE_BYTES + 5) {
        fail(stream, GRPC.resourceExhausted, 'CheckRequest too large');
        return;
      }
      chunks.push(chunk);
    });
    stream.on('end', () => {
      if (stream.headersSent) return;
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
        fail(
          stream,
          body[0] === 1 ? GRPC.unimplemented : GRPC.invalidArgument,
          body[0] === 1
            ? 'compressed messages are not accepted'
            : 'one length-prefixed CheckRequest expected',
        );
        return;
      }
      let message: unknown;
      try {
        message = CheckRequestType.decode(body.subarray(5));
      } catch {
        message = undefined;
      }
      if (!isCheckRequest(message)) {
        fail(stream, GRPC.invalidArgument, 'not a CheckRequest');
        return;
      }
      const rt = runtime();
      check(admission, rt, checkRequestOf(message, rt.keyHeader)).then(
        (answer) => reply(stream, answer, log),
        (err: unknown) => {
          log.error({ err }, 'decision: unexpected failure');
          reply(stream, checkFailed, log);
        },
      );
    });
  });
  return server;
}
