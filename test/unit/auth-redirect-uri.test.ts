// Redirect URI rules: http only to loopback hosts unless the client opts out, and RFC 8252 7.3's
// "any port" for loopback IP redirect URIs, everything else an exact string match.
import { describe, expect, it } from 'vitest';
import {
  INSECURE_REDIRECT_URI_RULE,
  registeredClientSchema,
} from '../../lib/config/client-registry.ts';
import { isSecureRedirectUri, redirectUriAllowed } from '../../lib/config/redirect-uri.ts';

describe('isSecureRedirectUri', () => {
  it.each([
    'https://app.example.com/cb',
    'https://app.example.com',
    'http://localhost:3000/callback',
    'http://localhost/cb?x=1',
    'http://127.0.0.1/cb',
    'http://127.255.0.9:49152/cb',
    'http://[::1]:8080/cb',
    'http://[::1]',
  ])('accepts %s', (uri) => expect(isSecureRedirectUri(uri)).toBe(true));

  it.each([
    'http://app.example.com/cb',
    'http://128.0.0.1/cb',
    'http://127.0.0.1.nip.io/cb',
    'http://localhost.example.com/cb',
    'http://localhost@evil.example/cb',
    'http://127.0.0.1:80@evil.example/cb',
    'http://127.0.0.256/cb',
    'http://127.1/cb',
    'http://[::2]/cb',
    'http://LOCALHOST/cb',
    'ftp://localhost/cb',
  ])('refuses %s', (uri) => expect(isSecureRedirectUri(uri)).toBe(false));
});

describe('redirectUriAllowed', () => {
  const client = (...redirect_uris: string[]) => ({ redirect_uris });

  it('matches a registered URI exactly', () => {
    const c = client('https://app.example.com/cb', 'http://localhost:3000/callback');
    expect(redirectUriAllowed(c, 'https://app.example.com/cb')).toBe(true);
    for (const uri of [
      'https://app.example.com/cb/',
      'https://app.example.com/cb?x=1',
      'https://APP.example.com/cb',
      'https://app.example.com:443/cb',
    ]) {
      expect(redirectUriAllowed(c, uri), uri).toBe(false);
    }
  });

  it('lets a loopback IP redirect URI use any port, with the same host, path and query', () => {
    const c = client('http://127.0.0.1/callback', 'http://[::1]:8000/cb?app=1');
    for (const uri of [
      'http://127.0.0.1:49152/callback',
      'http://127.0.0.1:1/callback',
      'http://127.0.0.1:65535/callback',
      'http://[::1]/cb?app=1',
      'http://[::1]:3000/cb?app=1',
    ]) {
      expect(redirectUriAllowed(c, uri), uri).toBe(true);
    }
    for (const uri of [
      'http://127.0.0.2:49152/callback',
      'http://127.0.0.1:49152/callback/',
      'http://127.0.0.1:49152/callback?x=1',
      'http://127.0.0.1:49152/other',
      'http://127.0.0.1:0/callback',
      'http://127.0.0.1:65536/callback',
      'http://127.0.0.1:49152@evil.example/callback',
      'https://127.0.0.1:49152/callback',
      'http://[::1]:3000/cb',
      'http://localhost:49152/callback',
    ]) {
      expect(redirectUriAllowed(c, uri), uri).toBe(false);
    }
  });

  it('matches localhost and other hosts exactly, port included', () => {
    const c = client('http://localhost:3000/callback', 'https://app.example.com:8443/cb');
    expect(redirectUriAllowed(c, 'http://localhost:3000/callback')).toBe(true);
    expect(redirectUriAllowed(c, 'http://localhost:3001/callback')).toBe(false);
    expect(redirectUriAllowed(c, 'https://app.example.com:9443/cb')).toBe(false);
  });
});

describe('the client registry', () => {
  const base = {
    client_id: 'app',
    display_name: 'App',
    scopes: ['profile'],
    token_endpoint_auth_method: 'none' as const,
  };

  it('refuses an http redirect URI to a host that is not loopback, naming it', () => {
    const parsed = registeredClientSchema.safeParse({
      ...base,
      redirect_uris: ['https://app.example.com/cb', 'http://app.example.com/cb'],
    });
    expect(parsed.error?.issues).toEqual([
      expect.objectContaining({ path: ['redirect_uris', 1], message: INSECURE_REDIRECT_URI_RULE }),
    ]);
  });

  it('accepts it when the client allows insecure redirect URIs, and loopback http always', () => {
    expect(
      registeredClientSchema.safeParse({
        ...base,
        redirect_uris: ['http://app.example.com/cb'],
        allow_insecure_redirect_uris: true,
      }).success,
    ).toBe(true);
    expect(
      registeredClientSchema.safeParse({
        ...base,
        redirect_uris: ['http://127.0.0.1/cb', 'http://localhost:3000/cb', 'http://[::1]:1/cb'],
      }).success,
    ).toBe(true);
  });
});
