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
import { z } from 'zod';
import type { Admission } from './admission.ts';
import { check, checkFailed, PROBLEM_CONTENT_TYPE, type CheckAnswer, type CheckRequest } from './decision.ts';
import { CHECK_PATH, CheckRequestType, CheckResponseType } from './ext-authz-proto.ts';
import type { RouteRuntime } from './route-runtime.ts';

export interface DecisionGrpcOptions {
  readonly logger: Logger;
  readonly admission: Admission;
  /** The runtime a new check uses (swapped by reloads). */
  readonly runtime: () => RouteRuntime;
}

/** What is read of a CheckRequest (protobuf guarantees the types; an absent message field is null on a decoded message). */
const checkRequestSchema = z.object({
  attributes: z
    .object({
      request: z
        .object({
          http: z
            .object({
              method: z.string().optional(),
              path: z.string().optional(),
              headers: z.record(z.string(), z.string()).optional(),
              header_map: z.object({ headers: z.array(z.object({ key: z.string(), value: z.string().optional(), raw_value: z.instanceof(Uint8Array).optional() })).optional() }).nullish(),
            })
            .nullish(),
        })
        .nullish(),
    })
    .nullish(),
});
type CheckRequestMessage = z.infer<typeof checkRequestSchema>;

/** The fields read of a decoded CheckRequest, or undefined when they are not of the expected types. */
export function parseCheckRequest(message: unknown): CheckRequestMessage | undefined {
  const parsed = checkRequestSchema.safeParse(message);
  return parsed.success ? parsed.data : undefined;
}

/** gRPC status codes (google.rpc.Code) by the refusal's HTTP status. */
const grpcCode = (httpStatus: number): number => {
  switch (httpStatus) {
    case 400: return 3; // INVALID_ARGUMENT
    case 401: return 16; // UNAUTHENTICATED
    case 404: return 5; // NOT_FOUND
    case 429: return 8; // RESOURCE_EXHAUSTED
    case 503: return 14; // UNAVAILABLE
    default: return 7; // PERMISSION_DENIED
  }
};

const OVERWRITE_IF_EXISTS_OR_ADD = 2;
const headerOptions = (flat: readonly string[]) => {
  const out = [];
  for (let i = 0; i < flat.length; i += 2) out.push({ header: { key: flat[i] as string, value: flat[i + 1] as string }, append_action: OVERWRITE_IF_EXISTS_OR_ADD });
  return out;
};

/** The original request of a CheckRequest; headers from `headers`, or from `header_map` when Envoy sends raw headers. */
export function checkRequestOf(message: CheckRequestMessage, keyHeader: string): CheckRequest {
  const http = message.attributes?.request?.http;
  const headers = new Map<string, string>();
  for (const [name, value] of Object.entries(http?.headers ?? {})) headers.set(name.toLowerCase(), value);
  for (const h of http?.header_map?.headers ?? []) {
    const name = h.key.toLowerCase();
    if (!headers.has(name)) headers.set(name, h.value !== undefined && h.value !== '' ? h.value : Buffer.from(h.raw_value ?? []).toString('latin1'));
  }
  return {
    method: http?.method ?? headers.get(':method') ?? 'GET',
    target: http?.path ?? headers.get(':path') ?? '',
    keyValue: headers.get(keyHeader),
    authorization: headers.get('authorization'),
  };
}

/** The CheckResponse (as a plain object for CheckResponseType) of an answer. */
export function checkResponseOf(answer: CheckAnswer): Record<string, unknown> {
  if (answer.allowed) {
    return {
      status: { code: 0 },
      ok_response: { headers: headerOptions(answer.upstreamHeaders), headers_to_remove: answer.removeHeaders, response_headers_to_add: headerOptions(answer.clientHeaders) },
    };
  }
  return {
    status: { code: grpcCode(answer.problem.status), message: answer.problem.title },
    denied_response: {
      status: { code: answer.problem.status },
      headers: headerOptions([...answer.headers, 'content-type', PROBLEM_CONTENT_TYPE, 'cache-control', 'no-store']),
      body: answer.body,
    },
  };
}

/** gRPC status codes used here (google.rpc.Code). */
const GRPC = { ok: 0, invalidArgument: 3, unimplemented: 12, internal: 13, resourceExhausted: 8 } as const;
/** The largest CheckRequest read (bytes); Envoy's are a few KiB of headers, a body only when configured. */
const MAX_MESSAGE_BYTES = 1024 * 1024;

/** A trailers-only gRPC answer: no message, the status in the (only) headers. */
function fail(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) }, { endStream: true });
}

/** One length-prefixed gRPC message (uncompressed). */
function frame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** An h2c server answering Authorization/Check (not listening: the caller listens). */
export function buildDecisionGrpcServer(options: DecisionGrpcOptions): http2.Http2Server {
  const { logger: log, admission, runtime } = options;
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined); // a reset by the client; nothing to answer
    if (headers[':method'] !== 'POST' || headers[':path'] !== CHECK_PATH || !String(headers['content-type'] ?? '').startsWith('application/grpc')) {
      fail(stream, GRPC.unimplemented, 'only envoy.service.auth.v3.Authorization/Check is served here');
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
        fail(stream, body[0] === 1 ? GRPC.unimplemented : GRPC.invalidArgument, body[0] === 1 ? 'compressed messages are not accepted' : 'one length-prefixed CheckRequest expected');
        return;
      }
      let parsed: CheckRequestMessage | undefined;
      try {
        parsed = parseCheckRequest(CheckRequestType.decode(body.subarray(5)));
      } catch {
        parsed = undefined;
      }
      if (parsed === undefined) {
        fail(stream, GRPC.invalidArgument, 'not a CheckRequest');
        return;
      }
      const rt = runtime();
      check(admission, rt, checkRequestOf(parsed, rt.keyHeader))
        .catch((err: unknown) => {
          log.error({ err }, 'decision: unexpected failure');
          return checkFailed;
        })
        .then((answer) => {
          if (stream.destroyed) return;
          stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
          stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(GRPC.ok), 'grpc-message': '' }));
          stream.end(frame(CheckResponseType.encode(checkResponseOf(answer)).finish()));
        })
        .catch((err: unknown) => {
          log.error({ err }, 'decision: could not answer a Check');
          fail(stream, GRPC.internal, 'internal error');
        });
    });
  });
  return server;
}
