// The log scanner: our programs must never log a secret, code, token or password.
//
// Two nets:
//   1. Every secret the tests send or receive is tracked (trackSecret, or automatically through
//      the fetch wrapper installed by reliability-setup.ts: client secrets, passwords, codes,
//      verifiers, access and refresh tokens, Basic and Bearer credentials, cookies) and every log
//      line of every program started during the test file is searched for it.
//   2. Generic patterns catch what nobody tracked: a JWT, a credential-bearing query parameter,
//      an Authorization header value, a JSON field named like a secret with a clear value.
// A finding fails the test file (reliability-setup.ts throws in afterAll), with the secret masked.

/** Secrets made only of base64url characters, looked up by the runs of such characters in a line. */
const runSecrets = new Map<string, string>();
/** Their first MIN_SECRET_LENGTH characters, to find a secret glued inside a longer run (`x-SECRET`). */
const prefixes = new Map<string, string[]>();

function addRunSecret(value: string, label: string): void {
  runSecrets.set(value, label);
  const head = value.slice(0, MIN_SECRET_LENGTH);
  const list = prefixes.get(head);
  if (list === undefined) prefixes.set(head, [value]);
  else if (!list.includes(value)) list.push(value);
}

/** Labels of every tracked secret inside one run of base64url characters. */
function secretsInRun(run: string): string[] {
  const exact = runSecrets.get(run);
  if (exact !== undefined) return [exact];
  const found: string[] = [];
  for (let i = 0; i + MIN_SECRET_LENGTH <= run.length; i++) {
    const list = prefixes.get(run.slice(i, i + MIN_SECRET_LENGTH));
    if (list === undefined) continue;
    for (const value of list)
      if (run.startsWith(value, i)) found.push(runSecrets.get(value) as string);
  }
  return found;
}
/** Other secrets (passwords with punctuation, ...), searched with includes(). */
const otherSecrets = new Map<string, string>();

/** Shorter values are too likely to occur by chance (a 5-letter password would match words). */
export const MIN_SECRET_LENGTH = 8;

const RUN = /[A-Za-z0-9_-]{8,}/g;
const ONLY_RUN = /^[A-Za-z0-9_-]+$/;

/** Adds one value the programs must never log. JWTs are tracked by their payload and signature. */
export function trackSecret(value: string | undefined | null, label: string): void {
  if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH) return;
  const parts = value.split('.');
  if (parts.length === 3 && parts.every((p) => ONLY_RUN.test(p))) {
    // A JWT: the header is shared by every token and public; payload and signature are unique.
    if ((parts[1] as string).length >= MIN_SECRET_LENGTH)
      addRunSecret(parts[1] as string, `${label} (JWT payload)`);
    if ((parts[2] as string).length >= MIN_SECRET_LENGTH)
      addRunSecret(parts[2] as string, `${label} (JWT signature)`);
    return;
  }
  if (ONLY_RUN.test(value)) addRunSecret(value, label);
  else otherSecrets.set(value, label);
}

export function trackedSecretCount(): number {
  return runSecrets.size + otherSecrets.size;
}

export function clearTrackedSecrets(): void {
  runSecrets.clear();
  prefixes.clear();
  otherSecrets.clear();
}

/** Field names whose values are secrets, in bodies, queries, JSON responses and headers. */
export const SECRET_FIELDS = new Set([
  'client_secret',
  'password',
  'code',
  'code_verifier',
  'access_token',
  'refresh_token',
  'id_token',
  'token',
  'csrf',
  'csrf_token',
  '_csrf',
]);

/** Tracks every secret-named field of a query string or form body. */
export function trackParams(params: URLSearchParams, label: string): void {
  for (const [k, v] of params) if (SECRET_FIELDS.has(k)) trackSecret(v, `${label} ${k}`);
}

/** Tracks every secret-named field of a JSON value, at any depth. */
export function trackJson(value: unknown, label: string, depth = 0): void {
  if (depth > 6 || value === null || typeof value !== 'object') return;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v === 'string' && SECRET_FIELDS.has(k)) trackSecret(v, `${label} ${k}`);
    else trackJson(v, label, depth + 1);
  }
}

/** Tracks an Authorization header (Basic: the secret half and the whole value; Bearer: the token). */
export function trackAuthorization(value: string | null | undefined, label: string): void {
  if (value === null || value === undefined) return;
  const [scheme, cred] = value.split(/\s+/, 2);
  if (cred === undefined) return;
  trackSecret(cred, `${label} ${scheme} credential`);
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(cred, 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i >= 0) {
      const secret = decoded.slice(i + 1);
      trackSecret(secret, `${label} Basic secret`);
      try {
        trackSecret(decodeURIComponent(secret), `${label} Basic secret`);
      } catch {
        // not percent-encoded
      }
    }
  }
}

/** Tracks cookie values (session and CSRF cookies are credentials). */
export function trackCookies(header: string | null | undefined, label: string): void {
  if (header === null || header === undefined) return;
  for (const part of header.split(/[;,]/)) {
    const eq = part.indexOf('=');
    if (eq > 0)
      trackSecret(part.slice(eq + 1).trim(), `${label} cookie ${part.slice(0, eq).trim()}`);
  }
}

interface Pattern {
  readonly name: string;
  readonly re: RegExp;
}

/** Secrets nobody tracked still look like secrets. */
export const GENERIC_PATTERNS: readonly Pattern[] = [
  { name: 'a JWT', re: /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/ },
  {
    name: 'a credential in a query or form',
    re: /[?&](code|code_verifier|client_secret|refresh_token|access_token|id_token|password|token)=(?!\[|REDACTED|%5B)[^&\s"']{6,}/i,
  },
  { name: 'an Authorization header value', re: /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/-]{12,}=*/ },
  {
    name: 'a secret-named JSON field with a clear value',
    re: /"(password|client_secret|clientSecret|refresh_token|access_token|id_token|code_verifier|authorization|cookie|set-cookie)"\s*:\s*"(?!\[Redacted\]|\[REDACTED\]|\*+")[^"]{4,}"/i,
  },
];

export interface Finding {
  readonly program: string;
  readonly lineNumber: number;
  readonly what: string;
  /** The line with every secret masked, cut to 300 characters. */
  readonly excerpt: string;
}

function mask(line: string): string {
  let out = line.replace(RUN, (run) =>
    secretsInRun(run).length > 0 ? `<${run.slice(0, 3)}…masked>` : run,
  );
  for (const s of otherSecrets.keys()) out = out.split(s).join('<masked>');
  for (const p of GENERIC_PATTERNS)
    out = out.replace(
      new RegExp(p.re.source, `${p.re.flags}g`),
      (m) => `${m.slice(0, 8)}…<masked>`,
    );
  return out.length > 300 ? `${out.slice(0, 300)}…` : out;
}

/** Scans the lines of one program; returns every finding (empty when clean). */
export function scanLines(program: string, lines: readonly string[]): Finding[] {
  const findings: Finding[] = [];
  lines.forEach((line, index) => {
    const hits: string[] = [];
    for (const run of line.match(RUN) ?? []) hits.push(...secretsInRun(run));
    for (const [s, label] of otherSecrets) if (line.includes(s)) hits.push(label);
    for (const p of GENERIC_PATTERNS) if (p.re.test(line)) hits.push(p.name);
    if (hits.length > 0)
      findings.push({
        program,
        lineNumber: index + 1,
        what: [...new Set(hits)].join(', '),
        excerpt: mask(line),
      });
  });
  return findings;
}

export function formatFindings(findings: readonly Finding[]): string {
  return (
    findings
      .slice(0, 20)
      .map((f) => `  ${f.program} line ${f.lineNumber}: ${f.what}\n    ${f.excerpt}`)
      .join('\n') + (findings.length > 20 ? `\n  ... and ${findings.length - 20} more` : '')
  );
}
