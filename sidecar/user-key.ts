// The key resolver (the specification's userIdAsKeyResolver): the FIRST value of the key
// header is the bucket key. The body is never read. Missing, empty, over-long or control
// characters: a typed rejection the proxy turns into a 4xx problem+json.

/** Longest accepted key, in bytes. */
export const MAX_KEY_BYTES = 256;

export type KeyRejection = 'missing' | 'empty' | 'too-long' | 'control-character';

export const keyRejectionDetail: Record<KeyRejection, (header: string) => string> = {
  missing: (h) => `The ${h} header is required: it identifies the rate-limit bucket.`,
  empty: (h) => `The ${h} header must not be empty.`,
  'too-long': (h) => `The ${h} header must be at most ${MAX_KEY_BYTES} bytes.`,
  'control-character': (h) => `The ${h} header must not contain control characters.`,
};

// Node decodes header bytes as latin1, so one character is one byte.
const controlCharacter = /[\x00-\x1f\x7f]/;

/** Checks one key value; undefined when acceptable. */
export function rejectKey(value: string | undefined): KeyRejection | undefined {
  if (value === undefined) return 'missing';
  if (value.length === 0) return 'empty';
  if (value.length > MAX_KEY_BYTES) return 'too-long';
  if (controlCharacter.test(value)) return 'control-character';
  return undefined;
}

/**
 * The key header value forwarded for a verified claim (jwt key): the claim with `%`, space and
 * every character outside visible ASCII percent-encoded as UTF-8 (RFC 3986 section 2.1), so any
 * claim, `ü` or `漢` included, travels as a valid field value that no hop trims or re-decodes.
 * A plain ASCII claim is forwarded as is.
 */
export function claimHeaderValue(claim: string): string {
  for (let i = 0; i < claim.length; i++) {
    const c = claim.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f || c === 0x25)
      return claim.replace(/[^!-$&-~]/gu, (ch) => encodeURIComponent(ch));
  }
  return claim;
}
