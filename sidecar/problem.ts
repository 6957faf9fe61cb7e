// RFC 9457 problem details, written straight to a node:http response.
import type { ServerResponse } from 'node:http';

export interface Problem {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  /** A stable identifier of the problem kind (URN), e.g. urn:portcullis:problem:rate-limited. */
  readonly type: string;
  readonly [extension: string]: unknown;
}

export const problemTypes = {
  rateLimited: 'urn:portcullis:problem:rate-limited',
  badKey: 'urn:portcullis:problem:invalid-user-id',
  invalidToken: 'urn:portcullis:problem:invalid-token',
  keyUnavailable: 'urn:portcullis:problem:token-keys-unavailable',
  notFound: 'urn:portcullis:problem:no-route',
  badRequest: 'urn:portcullis:problem:bad-request',
  storeUnavailable: 'urn:portcullis:problem:limiter-unavailable',
  upstreamUnavailable: 'urn:portcullis:problem:upstream-unavailable',
  upstreamTimeout: 'urn:portcullis:problem:upstream-timeout',
} as const;

/** Writes the problem; `headers` is a flat [name, value, ...] list of extra headers. */
export function sendProblem(res: ServerResponse, problem: Problem, headers: string[] = []): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(problem);
  headers.push('content-type', 'application/problem+json', 'content-length', String(Buffer.byteLength(body)), 'cache-control', 'no-store');
  res.writeHead(problem.status, headers);
  res.end(body);
}
