// Pure request parsing: parameters, scopes, Basic credentials, escaping, released claims.
import { describe, expect, it } from 'vitest';
import { parseBasic } from '../../services/auth-server/client-auth.ts';
import { readCookie } from '../../lib/web/cookies.ts';
import { escapeHtml, html, raw } from '../../lib/web/html.ts';
import { repeatedNames, single, toParams } from '../../services/auth-server/params.ts';
import { parseScope, releasedClaims } from '../../services/auth-server/scopes.ts';
import { parseRefreshToken, newRefreshToken } from '../../services/auth-server/issue-tokens.ts';

describe('parameters', () => {
  it('treats empty as absent and arrays of more than one as repeated', () => {
    const p = toParams({ a: 'x', b: '', c: ['1', '2'], d: ['only'] });
    if (p === undefined) throw new Error('parse failed');
    expect(single(p, 'a')).toEqual({ kind: 'value', value: 'x' });
    expect(single(p, 'b')).toEqual({ kind: 'absent' });
    expect(single(p, 'z')).toEqual({ kind: 'absent' });
    expect(single(p, 'c')).toEqual({ kind: 'repeated' });
    expect(single(p, 'd')).toEqual({ kind: 'value', value: 'only' });
    expect(repeatedNames(p)).toEqual(['c']);
  });

  it('refuses JSON bodies that are not flat string objects', () => {
    expect(toParams({ code: 1 })).toBeUndefined();
    expect(toParams({ code: { nested: 'x' } })).toBeUndefined();
    expect(toParams(['a'])).toBeUndefined();
    expect(toParams(undefined)).toEqual({});
  });
});

describe('scopes', () => {
  it('parses space-delimited scope tokens, de-duplicated, and refuses bad syntax', () => {
    expect(parseScope('profile email profile')).toEqual(['profile', 'email']);
    expect(parseScope('profile  email')).toBeUndefined();
    expect(parseScope('a"b')).toBeUndefined();
    expect(parseScope('')).toEqual([]);
  });

  it('releases only the claims of the granted scopes', () => {
    const profile = { name: 'Alice', email: 'a@example.com', email_verified: true, locale: 'en' };
    expect(releasedClaims(profile, ['profile'])).toEqual({ name: 'Alice', locale: 'en' });
    expect(releasedClaims(profile, ['email'])).toEqual({
      email: 'a@example.com',
      email_verified: true,
    });
    expect(releasedClaims(profile, ['other'])).toEqual({});
  });
});

describe('HTTP Basic client credentials (RFC 6749 2.3.1)', () => {
  const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
  it('form-decodes id and secret and splits at the first colon', () => {
    expect(parseBasic(basic('my%20client:p%3Ass+word:x'))).toEqual({
      id: 'my client',
      secret: 'p:ss word:x',
    });
    expect(parseBasic(`basic ${Buffer.from('a:b').toString('base64')}`)).toEqual({
      id: 'a',
      secret: 'b',
    });
  });
  it('refuses malformed credentials', () => {
    expect(parseBasic('Bearer abc')).toBeUndefined();
    expect(parseBasic(basic('no-colon'))).toBeUndefined();
    expect(parseBasic(basic(':secret'))).toBeUndefined();
    expect(parseBasic(basic('a:%E0%A4%A'))).toBeUndefined();
  });
});

describe('HTML escaping', () => {
  it('escapes every interpolated string and passes trusted fragments through', () => {
    expect(escapeHtml(`<script>"x" & 'y'</script>`)).toBe(
      '&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;',
    );
    const evil = '<img src=x onerror=alert(1)>';
    expect(html`<p>${evil}</p>${raw('<br>')}`.html).toBe(
      '<p>&lt;img src=x onerror=alert(1)&gt;</p><br>',
    );
    expect(html`<ul>${[html`<li>${'<a>'}</li>`]}</ul>`.html).toBe('<ul><li>&lt;a&gt;</li></ul>');
  });
});

describe('cookies and refresh-token format', () => {
  it('reads only well-formed cookie values', () => {
    expect(readCookie('a=1; portcullis_browser=abc_DEF-1', 'portcullis_browser')).toBe('abc_DEF-1');
    expect(readCookie('portcullis_browser=<x>', 'portcullis_browser')).toBeUndefined();
    expect(readCookie(undefined, 'x')).toBeUndefined();
  });
  it('refresh tokens carry their family id and parse back', () => {
    const t = newRefreshToken();
    expect(t.token).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    expect(parseRefreshToken(t.token)).toEqual({ familyId: t.familyId, hash: t.hash });
    expect(parseRefreshToken('eyJhbGciOi.x.y')).toBeUndefined();
  });
});
