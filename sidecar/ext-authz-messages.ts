// The messages of Envoy's ext_authz (envoy.service.auth.v3) and the decision service's checks:
// the CheckRequest's fields read, guarded (protobuf guarantees their types, a cast is not trusted),
// turned into a check, and a check's answer turned into a CheckResponse. The gRPC front door
// (decision-grpc.ts) frames and serves them.
import { PROBLEM_CONTENT_TYPE, type CheckAnswer, type CheckRequest } from './decision.ts';

/** What is read of a CheckRequest (an absent message field is null on a decoded message). */
interface CheckRequestMessage {
  readonly attributes?: {
    readonly request?: {
      readonly http?: {
        readonly method?: string;
        readonly path?: string;
        readonly headers?: Readonly<Record<string, string>>;
        readonly header_map?: {
          readonly headers?: readonly {
            readonly key: string;
            readonly value?: string;
            readonly raw_value?: Uint8Array;
          }[];
        } | null;
      } | null;
    } | null;
  } | null;
}

// Hand-written guards of the fields read, rejecting what the zod schema they replaced rejected
// (the unit tier holds them to it): its parse, which also copied the message, took about 4 µs a
// Check, these a quarter of one.
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
/** An object, null or undefined. */
const isNullishObject = (v: unknown): v is Record<string, unknown> | null | undefined =>
  v === undefined || v === null || isObject(v);
const isOptionalString = (v: unknown): boolean => v === undefined || typeof v === 'string';
/** A plain object, as a decoded map is: no constructor, or one whose prototype owns isPrototypeOf (an Object.prototype). */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (!isObject(v)) return false;
  const ctor = v.constructor;
  if (typeof ctor !== 'function') return true;
  const proto: unknown = ctor.prototype;
  return isObject(proto) && Object.hasOwn(proto, 'isPrototypeOf');
}
/** A map<string, string>: every own enumerable key a string (no symbols), every value a string. */
function isStringMap(v: unknown): boolean {
  if (!isPlainObject(v)) return false;
  for (const name of Object.keys(v))
    if (name !== '__proto__' && typeof v[name] !== 'string') return false;
  for (const sym of Object.getOwnPropertySymbols(v))
    if (Object.prototype.propertyIsEnumerable.call(v, sym)) return false;
  return true;
}
function isHeaderMap(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (!isObject(v)) return false;
  const headers = v['headers'];
  if (headers === undefined) return true;
  if (!Array.isArray(headers)) return false;
  for (const h of headers as unknown[]) {
    if (!isObject(h) || typeof h['key'] !== 'string' || !isOptionalString(h['value'])) return false;
    const raw = h['raw_value'];
    if (raw !== undefined && !(raw instanceof Uint8Array)) return false;
  }
  return true;
}

/** Whether a decoded CheckRequest has the fields read of the expected types (protobuf guarantees them; a cast is not trusted). */
export function isCheckRequest(message: unknown): message is CheckRequestMessage {
  if (!isObject(message)) return false;
  const attributes = message['attributes'];
  if (!isNullishObject(attributes)) return false;
  const request = attributes?.['request'];
  if (!isNullishObject(request)) return false;
  const http = request?.['http'];
  if (!isNullishObject(http)) return false;
  if (http === undefined || http === null) return true;
  return (
    isOptionalString(http['method']) &&
    isOptionalString(http['path']) &&
    (http['headers'] === undefined || isStringMap(http['headers'])) &&
    isHeaderMap(http['header_map'])
  );
}

/** gRPC status codes (google.rpc.Code) by the refusal's HTTP status. */
const grpcCode = (httpStatus: number): number => {
  switch (httpStatus) {
    case 400:
      return 3; // INVALID_ARGUMENT
    case 401:
      return 16; // UNAUTHENTICATED
    case 404:
      return 5; // NOT_FOUND
    case 429:
      return 8; // RESOURCE_EXHAUSTED
    case 503:
      return 14; // UNAVAILABLE
    default:
      return 7; // PERMISSION_DENIED
  }
};

const OVERWRITE_IF_EXISTS_OR_ADD = 2;
const headerOptions = (flat: readonly string[]) => {
  const out = [];
  for (let i = 0; i < flat.length; i += 2)
    out.push({
      header: { key: flat[i] as string, value: flat[i + 1] as string },
      append_action: OVERWRITE_IF_EXISTS_OR_ADD,
    });
  return out;
};

/** Whether a header is one a check reads (names lowercased). */
const isRead = (name: string, keyHeader: string) =>
  name === keyHeader || name === 'authorization' || name === ':method' || name === ':path';

/**
 * The original request of a CheckRequest; headers from `headers` (names in any case, the last of
 * a name wins), else from `header_map` when Envoy sends raw headers (the first of a name wins).
 * Only the headers read are kept: Envoy sends all of the request's.
 */
export function checkRequestOf(message: CheckRequestMessage, keyHeader: string): CheckRequest {
  const http = message.attributes?.request?.http;
  const headers = new Map<string, string>();
  const map = http?.headers;
  if (map !== undefined) {
    for (const key of Object.keys(map)) {
      const name = key.toLowerCase();
      if (key !== '__proto__' && isRead(name, keyHeader)) headers.set(name, map[key] as string);
    }
  }
  for (const h of http?.header_map?.headers ?? []) {
    const name = h.key.toLowerCase();
    if (isRead(name, keyHeader) && !headers.has(name))
      headers.set(
        name,
        h.value !== undefined && h.value !== ''
          ? h.value
          : Buffer.from(h.raw_value ?? []).toString('latin1'),
      );
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
      ok_response: {
        headers: headerOptions(answer.upstreamHeaders),
        headers_to_remove: answer.removeHeaders,
        response_headers_to_add: headerOptions(answer.clientHeaders),
      },
    };
  }
  return {
    status: { code: grpcCode(answer.problem.status), message: answer.problem.title },
    denied_response: {
      status: { code: answer.problem.status },
      headers: headerOptions([
        ...answer.headers,
        'content-type',
        PROBLEM_CONTENT_TYPE,
        'cache-control',
        'no-store',
      ]),
      body: answer.body,
    },
  };
}
