// The decision service's gRPC front door: envoy.service.auth.v3.Authorization/Check, what Envoy's
// ext_authz filter (grpc_service), Envoy Gateway's extAuth and Istio's CUSTOM action call.
// Admitted: status OK, the limiter's headers to add upstream (headers, overwriting: with jwt the
// verified key replaces what the client sent) and to the client's response
// (response_headers_to_add). Refused: a denied response carrying the HTTP status, the refusal's
// headers and the problem+json body, which Envoy returns to the client as they are; the gRPC
// status says why (RESOURCE_EXHAUSTED, INVALID_ARGUMENT, UNAUTHENTICATED, UNAVAILABLE...).
import * as grpc from '@grpc/grpc-js';
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
    return { status: { code: 0 }, ok_response: { headers: headerOptions(answer.upstreamHeaders), response_headers_to_add: headerOptions(answer.clientHeaders) } };
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

/** A grpc-js server with the Authorization service (not bound: the caller binds it). */
export function buildDecisionGrpcServer(options: DecisionGrpcOptions): grpc.Server {
  const { logger: log, admission, runtime } = options;
  const server = new grpc.Server();
  const definition: grpc.ServiceDefinition = {
    Check: {
      path: CHECK_PATH,
      requestStream: false,
      responseStream: false,
      // The decoded message as it is (its fields are plain properties; checkRequestSchema reads them),
      // and the response as a plain object of the message's shape: protobufjs encodes either, and
      // skipping its toObject/fromObject copies halves the cost of a Check's (de)serialization.
      requestSerialize: (value: unknown) => Buffer.from(CheckRequestType.encode(CheckRequestType.fromObject(value as Record<string, unknown>)).finish()),
      requestDeserialize: (bytes: Buffer) => CheckRequestType.decode(bytes),
      responseSerialize: (value: unknown) => Buffer.from(CheckResponseType.encode(value as Record<string, unknown>).finish()),
      responseDeserialize: (bytes: Buffer) => CheckResponseType.toObject(CheckResponseType.decode(bytes)),
    },
  };
  const handleCheck: grpc.handleUnaryCall<unknown, Record<string, unknown>> = (call, callback) => {
    const parsed = parseCheckRequest(call.request);
    if (parsed === undefined) {
      callback({ code: grpc.status.INVALID_ARGUMENT, details: 'not a CheckRequest' });
      return;
    }
    const rt = runtime();
    check(admission, rt, checkRequestOf(parsed, rt.keyHeader)).then(
      (answer) => callback(null, checkResponseOf(answer)),
      (err: unknown) => {
        log.error({ err }, 'decision: unexpected failure');
        callback(null, checkResponseOf(checkFailed));
      },
    );
  };
  server.addService(definition, { Check: handleCheck });
  return server;
}
