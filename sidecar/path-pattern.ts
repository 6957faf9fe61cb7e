// Ant-style path patterns (the specification's `/**` predicate): `?` one character, `*` any
// characters within one segment, `**` as a whole segment any number of segments (also none).
// Matching works on the canonical request path (lib/web/canonical-target.ts: no dot-segments, no
// escaped unreserved characters), exactly as it is forwarded.

export type PathMatcher = (path: string) => boolean;

/** `caseInsensitive`: letters match in either case (an upstream whose routing ignores case). */
export function compilePathPattern(pattern: string, caseInsensitive = false): PathMatcher {
  if (!pattern.startsWith('/')) throw new Error(`path pattern must start with '/': ${pattern}`);
  if (pattern === '/**') return () => true;
  let source = '^';
  const segments = pattern.split('/').slice(1);
  for (const segment of segments) {
    if (segment === '**') {
      source += '(?:/[^/]*)*';
      continue;
    }
    source += '/';
    for (const ch of segment) {
      if (ch === '*') source += '[^/]*';
      else if (ch === '?') source += '[^/]';
      else source += ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    }
  }
  source += '$';
  const re = new RegExp(source, caseInsensitive ? 'i' : '');
  return (path) => re.test(path);
}
