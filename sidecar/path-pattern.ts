// Ant-style path patterns (the specification's `/**` predicate): `?` one character, `*` any
// characters within one segment, `**` as a whole segment any number of segments (also none).
// Matching works on the raw request path (before `?`), exactly as it is forwarded.

export type PathMatcher = (path: string) => boolean;

const dotSegment = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;

export function compilePathPattern(pattern: string): PathMatcher {
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
  const re = new RegExp(source);
  // A dot-segment could step outside the pattern once the upstream normalises the path.
  return (path) => re.test(path) && !dotSegment.test(path);
}
