// JSON answers of the back-channel endpoints (token, revocation, introspection): never cached
// (RFC 6749 5.1); errors per RFC 6749 5.2, a 401 invalid_client with WWW-Authenticate.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from './errors.ts';
import { repeatedNames, toParams, type Params } from './params.ts';

export function noStore(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
}

export function sendOAuthError(reply: FastifyReply, err: OAuthError): FastifyReply {
  noStore(reply).code(err.status);
  if (err.status === 401)
    reply.header('www-authenticate', 'Basic realm="portcullis", charset="UTF-8"');
  if (err.retryAfterSeconds !== undefined)
    reply.header('retry-after', String(err.retryAfterSeconds));
  return reply.type('application/json; charset=utf-8').send(err.toJSON());
}

/** The body's parameters (form or JSON), refusing nested values and repeated parameters. */
export function bodyParams(request: FastifyRequest): Params {
  const params = toParams(request.body);
  if (params === undefined)
    throw new OAuthError('invalid_request', 'the body must be a form or a JSON object of strings');
  const repeated = repeatedNames(params);
  if (repeated.length > 0)
    throw new OAuthError('invalid_request', `parameter repeated: ${repeated.join(', ')}`);
  return params;
}
