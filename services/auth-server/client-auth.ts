// Client authentication at the token, revocation and introspection endpoints (RFC 6749 2.3.1):
// HTTP Basic (client_secret_basic) or the secret in the body (client_secret_post), a method the
// client registered (token_endpoint_auth_method, or any of token_endpoint_auth_methods); public clients (method none) send only client_id. One method per
// request. Failures are invalid_client; with Basic the 401 carries WWW-Authenticate. Wrong secrets
// are counted per client and address (client-auth-throttle.ts): past the budget the answer is 429
// and the secret is not checked.
import type { FastifyRequest } from 'fastify';
import type { RegisteredClient } from '../../lib/config/client-registry.ts';
import type { AuthContext } from './context.ts';
import { verifyClientSecret } from '../../lib/config/client-secret.ts';
import { OAuthError } from './errors.ts';
import { single, type Params } from './params.ts';

/** RFC 6749 2.3.1: the Basic credentials are form-urlencoded before base64. */
function formDecode(value: string): string | undefined {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

export function parseBasic(header: string): { id: string; secret: string } | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m?.[1]) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const id = formDecode(decoded.slice(0, colon));
  const secret = formDecode(decoded.slice(colon + 1));
  return id === undefined || secret === undefined || id === '' ? undefined : { id, secret };
}

/** The presented secret matches the client's; throws 429 while this client and address are locked out. */
function secretMatches(
  ctx: AuthContext,
  request: FastifyRequest,
  clientId: string,
  storedHash: string,
  secret: string,
): boolean {
  const gate = ctx.clientAuthThrottle.check(clientId, request.ip);
  if (!gate.allowed) {
    throw new OAuthError(
      'invalid_client',
      `too many failed client authentications from this address; retry after ${gate.retryAfterSeconds} s`,
      {
        tooManyRequests: { retryAfterSeconds: gate.retryAfterSeconds },
      },
    );
  }
  if (verifyClientSecret(secret, storedHash)) return true;
  if (ctx.clientAuthThrottle.failed(clientId, request.ip)) {
    request.log.warn(
      { client_id: clientId, address: request.ip },
      'client authentication locked: too many wrong secrets from this address',
    );
  }
  return false;
}

/**
 * The authenticated client; throws invalid_client (401, or 429 while locked out), counted in
 * portcullis_auth_client_auth_failures_total, or invalid_request for a malformed request.
 */
export function authenticateClient(
  ctx: AuthContext,
  request: FastifyRequest,
  params: Params,
): RegisteredClient {
  try {
    return identifyClient(ctx, request, params);
  } catch (err) {
    if (err instanceof OAuthError && err.error === 'invalid_client')
      ctx.metrics.clientAuthFailures.inc({ reason: err.status === 429 ? 'throttled' : 'rejected' });
    throw err;
  }
}

/** The client may authenticate with this method: its registered one or one of those it lists. */
function accepts(
  client: RegisteredClient,
  method: 'client_secret_basic' | 'client_secret_post',
): boolean {
  return (
    client.token_endpoint_auth_method === method ||
    client.token_endpoint_auth_methods?.includes(method) === true
  );
}

function identifyClient(
  ctx: AuthContext,
  request: FastifyRequest,
  params: Params,
): RegisteredClient {
  const authorization = request.headers.authorization;
  const bodyId = single(params, 'client_id');
  const bodySecret = single(params, 'client_secret');
  if (bodyId.kind === 'repeated' || bodySecret.kind === 'repeated')
    throw new OAuthError('invalid_request', 'client_id or client_secret repeated');

  if (authorization !== undefined) {
    const basic = parseBasic(authorization);
    const refuse = (why: string) => new OAuthError('invalid_client', why, { basicChallenge: true });
    if (basic === undefined)
      throw refuse('the Authorization header is not valid HTTP Basic client authentication');
    if (bodySecret.kind === 'value')
      throw new OAuthError(
        'invalid_request',
        'use one client authentication method, not Basic and client_secret',
      );
    if (bodyId.kind === 'value' && bodyId.value !== basic.id)
      throw new OAuthError('invalid_request', 'client_id differs from the Basic credentials');
    const client = ctx.directory.client(basic.id);
    if (
      client?.client_secret_hash === undefined ||
      !secretMatches(ctx, request, client.client_id, client.client_secret_hash, basic.secret)
    ) {
      throw refuse('client authentication failed');
    }
    if (!accepts(client, 'client_secret_basic'))
      throw refuse('this client is registered for another authentication method');
    return client;
  }

  if (bodyId.kind !== 'value')
    throw new OAuthError('invalid_client', 'client authentication is required');
  const client = ctx.directory.client(bodyId.value);
  if (client === undefined) throw new OAuthError('invalid_client', 'client authentication failed');
  if (bodySecret.kind === 'value') {
    if (
      client.client_secret_hash === undefined ||
      !secretMatches(ctx, request, client.client_id, client.client_secret_hash, bodySecret.value)
    ) {
      throw new OAuthError('invalid_client', 'client authentication failed');
    }
    if (!accepts(client, 'client_secret_post')) {
      throw new OAuthError(
        'invalid_client',
        'this client is registered for another authentication method',
      );
    }
    return client;
  }
  if (client.token_endpoint_auth_method !== 'none')
    throw new OAuthError('invalid_client', 'client authentication is required');
  return client;
}
