// Ant-style path patterns (sidecar/path-pattern.ts).
import { describe, expect, it } from 'vitest';
import { compilePathPattern } from '../../sidecar/path-pattern.ts';

const cases: [string, string, boolean][] = [
  ['/**', '/', true],
  ['/**', '/healthcheck/ready', true],
  ['/**', '/a/../b', true],
  ['/api/*', '/api/users', true],
  ['/api/*', '/api/', true],
  ['/api/*', '/api', false],
  ['/api/*', '/api/users/1', false],
  ['/api/**', '/api', true],
  ['/api/**', '/api/users/1', true],
  ['/api/**', '/apix', false],
  ['/a/**/b', '/a/b', true],
  ['/a/**/b', '/a/x/y/b', true],
  ['/a/**/b', '/a/x/y/c', false],
  ['/files/*.txt', '/files/notes.txt', true],
  ['/files/*.txt', '/files/notesxtxt', false],
  ['/v?/x', '/v1/x', true],
  ['/v?/x', '/v10/x', false],
  ['/healthcheck/ready', '/healthcheck/ready', true],
  ['/healthcheck/ready', '/healthcheck/ready/', false],
  ['/a+b/(c)', '/a+b/(c)', true],
  ['/a+b/(c)', '/aab/c', false],
];

describe('Ant-style path patterns', () => {
  it.each(cases)('%s matches %s: %s', (pattern, path, expected) => {
    expect(compilePathPattern(pattern)(path)).toBe(expected);
  });

  it('case-insensitive patterns match letters in either case, and nothing else more', () => {
    const m = compilePathPattern('/api/admin/**', true);
    expect(m('/API/Admin/users')).toBe(true);
    expect(m('/api/admin')).toBe(true);
    expect(m('/api/adminx')).toBe(false);
    expect(compilePathPattern('/api/admin/**')('/API/admin')).toBe(false);
  });

  it('rejects a pattern that does not start with /', () => {
    expect(() => compilePathPattern('api/**')).toThrow("path pattern must start with '/': api/**");
  });
});
