// The decision service's HTTP front door: Envoy's HTTP ext_authz (the original request, its path
// after path_prefix) and forward-auth (Traefik ForwardAuth, Caddy forward_auth, nginx
// auth_request: the original named in headers by a trusted peer, forwarded-request.ts).
// Admitted: 200, empty body, the limiter's headers and the key header set to the identity charged
// for the gateway to copy upstream and to the client, and (Envoy) the key header's look-alikes
// named in x-envoy-auth-headers-to-remove. A forward-auth gateway copies only the headers it is
// told to, and removes none: docs/gateway.md says what that leaves open. Refused: the status, headers and problem+json body
// the client should get, as they are (Envoy, Traefik and Caddy return them unchanged).
// nginx's auth_request passes only 401 and 403 on; its wiring (docs/concepts/gateway.md) reads a refusal's
// status and headers into variables, and asks for the body in a header (PROBLEM_HEADER).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BlockList } from 'node:net';
import type { Logger } from 'pino';
import type { Admission } from './admission.ts';
import { check, checkFailed, PROBLEM_CONTENT_TYPE, type CheckAnswer } from './decision.ts';
import { originalRequest } from './forwarded-request.ts';
import type { RouteRuntime } from './route-runtime.ts';

/** A check request carrying this header (any value) gets a refusal's problem+json also in the PROBLEM_HEADER response header. */
export const PROBLEM_IN_HEADER = 'portcullis-problem-in-header';
export const PROBLEM_HEADER = 'portcullis-problem';

export interface DecisionHttpOptions {
  readonly logger: Logger;
  readonly admission: Admission;
  /** The runtime a new check uses (swapped by reloads). */
  readonly runtime: () => RouteRuntime;
  readonly trusted: BlockList;
  readonly pathPrefix: string;
}

const first = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/** JSON with every non-printable-ASCII character escaped: a valid header value. */
const headerSafe = (json: string): string =>
  json.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** Envoy's HTTP ext_authz removes the headers this response header names from the request it forwards. */
export const HEADERS_TO_REMOVE = 'x-envoy-auth-headers-to-remove';

function write(req: IncomingMessage, res: ServerResponse, answer: CheckAnswer): void {
  if (answer.allowed) {
    const headers = [...answer.upstreamHeaders, 'cache-control', 'no-store', 'content-length', '0'];
    if (answer.removeHeaders.length > 0)
      headers.push(HEADERS_TO_REMOVE, answer.removeHeaders.join(','));
    res.writeHead(200, headers);
    res.end();
    return;
  }
  const headers = [
    ...answer.headers,
    'content-type',
    PROBLEM_CONTENT_TYPE,
    'cache-control',
    'no-store',
    'content-length',
    String(Buffer.byteLength(answer.body)),
  ];
  if (req.headers[PROBLEM_IN_HEADER] !== undefined)
    headers.push(PROBLEM_HEADER, headerSafe(answer.body));
  res.writeHead(answer.problem.status, headers);
  res.end(answer.body);
}

/** The node:http request handler of the HTTP front door. */
export function decisionHttpHandler(
  options: DecisionHttpOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const { logger: log, admission, runtime, trusted, pathPrefix } = options;
  return (req, res) => {
    // A check carries no body worth reading; drain whatever came so keep-alive goes on.
    req.resume();
    const rt = runtime();
    const original = originalRequest(req, trusted, pathPrefix);
    const keyValue = first(req.headersDistinct[rt.keyHeader]);
    check(
      admission,
      rt,
      {
        method: original.method,
        target: original.target,
        keyValue,
        authorization: first(req.headers.authorization),
      },
      req.socket,
    ).then(
      (answer) => write(req, res, answer),
      (err: unknown) => {
        log.error({ err }, 'decision: unexpected failure');
        write(req, res, checkFailed);
      },
    );
  };
}
