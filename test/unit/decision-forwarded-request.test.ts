// Which request a decision-service HTTP check is about: forward-auth headers are believed only
// from decision.trustedProxies (otherwise anyone reaching the service could name another path
// and spend or dodge its budget); Envoy's path_prefix is removed only as a whole segment.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { originalRequest, trustedPeers } from '../../sidecar/forwarded-request.ts';

const req = (
  remoteAddress: string,
  url: string,
  headers: Record<string, string>,
  method = 'GET',
): IncomingMessage =>
  ({ method, url, headers, socket: { remoteAddress } }) as unknown as IncomingMessage;

describe('originalRequest', () => {
  const trusted = trustedPeers(['10.0.0.0/8', '::1']);

  it('a trusted peer names the original with X-Forwarded-Method/-Uri (Traefik, Caddy)', () => {
    expect(
      originalRequest(
        req('10.1.2.3', '/check', {
          'x-forwarded-method': 'post',
          'x-forwarded-uri': '/orders?x=1',
        }),
        trusted,
        '',
      ),
    ).toEqual({ method: 'POST', target: '/orders?x=1', via: 'forwarded' });
  });

  it('or with X-Original-Method/-URI (the nginx wiring); an IPv4-mapped IPv6 peer counts as its IPv4 address', () => {
    expect(
      originalRequest(
        req('::ffff:10.0.0.9', '/.portcullis', {
          'x-original-method': 'DELETE',
          'x-original-uri': '/a',
        }),
        trusted,
        '',
      ),
    ).toMatchObject({ method: 'DELETE', target: '/a' });
    expect(
      originalRequest(req('::1', '/x', { 'x-original-uri': '/b' }), trusted, ''),
    ).toMatchObject({ target: '/b', via: 'forwarded' });
  });

  it("an untrusted peer's forward-auth headers are ignored: the check request itself is decided on", () => {
    expect(
      originalRequest(
        req(
          '192.168.1.1',
          '/orders',
          { 'x-forwarded-uri': '/free', 'x-forwarded-method': 'GET' },
          'POST',
        ),
        trusted,
        '',
      ),
    ).toEqual({ method: 'POST', target: '/orders', via: 'direct' });
    expect(
      originalRequest(
        req('127.0.0.1', '/orders', { 'x-original-uri': '/free' }),
        trustedPeers([]),
        '',
      ),
    ).toMatchObject({ target: '/orders', via: 'direct' });
  });

  it('removes the path prefix only as whole segments', () => {
    const none = trustedPeers([]);
    expect(originalRequest(req('1.2.3.4', '/authz/api/x?q=1', {}), none, '/authz').target).toBe(
      '/api/x?q=1',
    );
    expect(originalRequest(req('1.2.3.4', '/authz', {}), none, '/authz').target).toBe('/');
    expect(originalRequest(req('1.2.3.4', '/authz?q', {}), none, '/authz').target).toBe('/?q');
    expect(originalRequest(req('1.2.3.4', '/authzapi/x', {}), none, '/authz').target).toBe(
      '/authzapi/x',
    );
  });
});
