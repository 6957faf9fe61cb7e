// The one request target a request is matched on AND forwarded with, so that the rule that
// charges a request is the rule for the handler the upstream runs, whatever the upstream's own
// path handling (fastify, WHATWG URL, Go's ServeMux, CGI/WSGI). Given an origin-form target, the
// path (before `?`) is made canonical; the query is kept as sent:
//   - percent-escapes of unreserved characters (RFC 3986 section 2.3: letters, digits, - . _ ~)
//     are decoded (`%61` -> `a`, `%2e` -> `.`); other escapes are kept, hex digits upper-cased;
//   - dot-segments are resolved (RFC 3986 section 5.2.4), after that decoding;
//   - runs of `/` are merged into one when mergeSlashes is on (the default); when it is off they
//     are kept, but a path that would start with `//` is refused (a WHATWG URL parser reads it as
//     a host);
// and refused (400) when it cannot be made canonical: `#` anywhere (a fragment is never part of a
// request target, and parsers disagree on where the path ends), a backslash (WHATWG URL reads it
// as `/`), an escaped `/` or `\` (`%2F`, `%5C`: some servers decode them into separators), an
// escaped control character, a malformed escape, or a byte outside visible ASCII.

export interface PathSettings {
  /** Merge runs of `/` into one (forwarded merged). */
  readonly mergeSlashes: boolean;
}

/** Why a target cannot be made canonical. */
export type TargetRejection =
  | 'fragment'
  | 'backslash'
  | 'encoded-separator'
  | 'bad-escape'
  | 'control-or-non-ascii'
  | 'double-slash';

export const targetRejectionDetail: Record<TargetRejection, string> = {
  fragment: 'The request target must not contain #.',
  backslash: 'The request path must not contain a backslash.',
  'encoded-separator':
    'The request path must not contain an escaped / or \\ (%2F, %5C) or an escaped control character.',
  'bad-escape': 'The request path has a malformed percent-escape.',
  'control-or-non-ascii': 'The request path must be visible ASCII; percent-encode anything else.',
  'double-slash': 'The request path must not start with //.',
};

/** A rejection, told apart from a target (which always starts with `/`). */
export interface TargetRefusal {
  readonly rejected: TargetRejection;
}

const refusals = Object.fromEntries(
  Object.keys(targetRejectionDetail).map((r) => [r, { rejected: r }]),
) as Record<TargetRejection, TargetRefusal>;

const HEX = '0123456789ABCDEF';

/**
 * The canonical form of an origin-form target (`/` first; the caller checks that), or why there
 * is none. Returns `url` itself (no copy) when it is canonical already, the common case.
 */
export function canonicalTarget(url: string, settings: PathSettings): string | TargetRefusal {
  const q = url.indexOf('?');
  const end = q < 0 ? url.length : q;
  if (q >= 0 && url.indexOf('#', q) >= 0) return refusals.fragment;
  // One pass deciding whether the path needs work: only `%`, `//` and `/.` do.
  let work = false;
  for (let i = 0; i < end; i++) {
    const c = url.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return refusals['control-or-non-ascii'];
    if (c === 0x23 /* # */) return refusals.fragment;
    if (c === 0x5c /* \ */) return refusals.backslash;
    if (c === 0x25 /* % */) work = true;
    else if (c === 0x2f /* / */ && i + 1 < end) {
      const n = url.charCodeAt(i + 1);
      if (n === 0x2f || n === 0x2e) work = true;
    }
  }
  if (!work) return url;
  const path = canonicalPath(url.slice(0, end), settings);
  if (typeof path !== 'string') return path;
  return q < 0 ? path : path + url.slice(q);
}

/** The slow path: a path known to hold an escape, a dot-segment candidate or `//`. */
function canonicalPath(path: string, settings: PathSettings): string | TargetRefusal {
  const segments = path.split('/');
  const out: string[] = [];
  const last = segments.length - 1;
  // segments[0] is the empty string before the leading `/`.
  for (let i = 1; i <= last; i++) {
    const raw = segments[i] as string;
    const segment = raw.includes('%') ? decodeUnreserved(raw) : raw;
    if (typeof segment !== 'string') return segment;
    if (segment === '.' || segment === '..') {
      if (segment === '..') out.pop();
      // A dot-segment last leaves the directory: `/a/b/..` is `/a/`.
      if (i === last) out.push('');
      continue;
    }
    if (segment === '' && i !== last && settings.mergeSlashes) continue;
    out.push(segment);
  }
  const canonical = '/' + out.join('/');
  if (canonical.charCodeAt(1) === 0x2f) return refusals['double-slash'];
  return canonical;
}

const isHex = (c: number) =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
const isUnreserved = (c: number) =>
  (c >= 0x41 && c <= 0x5a) ||
  (c >= 0x61 && c <= 0x7a) ||
  (c >= 0x30 && c <= 0x39) ||
  c === 0x2d ||
  c === 0x2e ||
  c === 0x5f ||
  c === 0x7e;

/** One segment with its unreserved escapes decoded and the others in upper case. */
function decodeUnreserved(segment: string): string | TargetRefusal {
  let out = '';
  let from = 0;
  for (let i = segment.indexOf('%'); i >= 0; i = segment.indexOf('%', from)) {
    const h = segment.charCodeAt(i + 1);
    const l = segment.charCodeAt(i + 2);
    if (!isHex(h) || !isHex(l)) return refusals['bad-escape'];
    const byte = parseInt(segment.slice(i + 1, i + 3), 16);
    if (byte === 0x2f || byte === 0x5c || byte < 0x20 || byte === 0x7f)
      return refusals['encoded-separator'];
    out +=
      segment.slice(from, i) +
      (isUnreserved(byte) ? String.fromCharCode(byte) : `%${HEX[byte >> 4]}${HEX[byte & 15]}`);
    from = i + 3;
  }
  return out + segment.slice(from);
}

/**
 * Why a path pattern (lib/config/sidecar.ts) could never match as written, or undefined: requests
 * are matched in canonical form, so a pattern must be canonical too (`/api/%61dmin/**` would
 * match nothing; `/api/admin/**` is what was meant).
 */
export function patternProblem(pattern: string): string | undefined {
  // `?` is a one-character wildcard in a pattern, not the start of a query.
  const probe = pattern.replaceAll('?', 'a');
  const canonical = canonicalTarget(probe, { mergeSlashes: true });
  if (typeof canonical !== 'string')
    return `requests are matched in canonical form, so this pattern could never match: ${targetRejectionDetail[canonical.rejected]}`;
  if (canonical === probe) return undefined;
  const hint = pattern.includes('?') ? '' : `: write ${canonical}`;
  return `requests are matched in canonical form (escapes of letters, digits and -._~ decoded, hex in upper case, dot-segments resolved, // merged), so this pattern could never match as written${hint}`;
}
