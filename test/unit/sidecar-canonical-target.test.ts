// The canonical request target (lib/web/canonical-target.ts): one form that rule matching and the
// upstream both see, or a refusal. Each row is a variant that once reached some upstream's strict
// handler outside the strict rule.
import { describe, expect, it } from 'vitest';
import { canonicalTarget, type TargetRejection } from '../../lib/web/canonical-target.ts';

const merge = { mergeSlashes: true };
const keep = { mergeSlashes: false };

const canonical: [string, string][] = [
  ['/', '/'],
  ['/api/users/1', '/api/users/1'],
  ['/api/users?q=a/../b', '/api/users?q=a/../b'],
  ['/.well-known/openid-configuration', '/.well-known/openid-configuration'],
  ['/files/a.b/..c/...', '/files/a.b/..c/...'],
  // dot-segments (RFC 3986 section 5.2.4)
  ['/api/admin/./users/1', '/api/admin/users/1'],
  ['/api/x/../admin/users/1', '/api/admin/users/1'],
  ['/api/admin/%2e/users/1', '/api/admin/users/1'],
  ['/api/x/%2E%2e/admin/users/1', '/api/admin/users/1'],
  ['/api/x/.%2e/admin', '/api/admin'],
  ['/../../api/admin', '/api/admin'],
  ['/api/admin/..', '/api/'],
  ['/api/admin/.', '/api/admin/'],
  ['/api/admin/users/..?x=1', '/api/admin/?x=1'],
  // unreserved escapes decoded, others kept in upper case
  ['/api/%61dmin/users/1', '/api/admin/users/1'],
  ['/api/%41%44MIN', '/api/ADMIN'],
  ['/%7Euser/%2d%5f', '/~user/-_'],
  ['/a%20b/%c3%a9', '/a%20b/%C3%A9'],
  ['/a%2525', '/a%2525'],
  ['/q%3fx%23y', '/q%3Fx%23y'],
  // slashes merged by default
  ['//api/admin/users', '/api/admin/users'],
  ['/api//admin///users/', '/api/admin/users/'],
  ['/api/admin//..//users', '/api/users'],
];

const refused: [string, TargetRejection][] = [
  ['/me#/..', 'fragment'],
  ['/api/admin#x', 'fragment'],
  ['/api?x=1#frag', 'fragment'],
  ['/api\\admin/users', 'backslash'],
  ['/api/admin%2Fusers', 'encoded-separator'],
  ['/api%2fadmin/users', 'encoded-separator'],
  ['/api%5Cadmin', 'encoded-separator'],
  ['/api/a%00', 'encoded-separator'],
  ['/api/a%0d%0a', 'encoded-separator'],
  ['/api/%zz', 'bad-escape'],
  ['/api/%4', 'bad-escape'],
  ['/api/%', 'bad-escape'],
  ['/api/\u00e9', 'control-or-non-ascii'],
  ['/api/a b', 'control-or-non-ascii'],
  ['/api/a\u007f', 'control-or-non-ascii'],
];

describe('canonical request targets', () => {
  it.each(canonical)('%s is forwarded and matched as %s', (url, expected) => {
    expect(canonicalTarget(url, merge)).toBe(expected);
    // Canonical means a fixed point.
    expect(canonicalTarget(expected, merge)).toBe(expected);
  });

  it.each(refused)('%s is refused (%s)', (url, reason) => {
    expect(canonicalTarget(url, merge)).toEqual({ rejected: reason });
    expect(canonicalTarget(url, keep)).toEqual({ rejected: reason });
  });

  it('returns the same string when nothing changes (no copy on the hot path)', () => {
    const url = '/api/users/42?page=2';
    expect(canonicalTarget(url, merge)).toBe(url);
  });

  it('without mergeSlashes keeps inner runs of / but refuses a path that would start with //', () => {
    expect(canonicalTarget('/api//admin/users', keep)).toBe('/api//admin/users');
    expect(canonicalTarget('/api//admin/./users', keep)).toBe('/api//admin/users');
    expect(canonicalTarget('//api/admin', keep)).toEqual({ rejected: 'double-slash' });
    expect(canonicalTarget('/x/..//api/admin', keep)).toEqual({ rejected: 'double-slash' });
    expect(canonicalTarget('/%2e//api', keep)).toEqual({ rejected: 'double-slash' });
  });

  it('a WHATWG URL parser reads every canonical path as it is (what a URL-based router routes)', () => {
    for (const [, c] of canonical) {
      const u = new URL(c, 'http://upstream.test');
      expect(u.pathname + u.search).toBe(c);
    }
  });
});
