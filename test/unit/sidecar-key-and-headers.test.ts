// The key resolver's rules (sidecar/user-key.ts) and the rate-limit header sets.
import { describe, expect, it } from 'vitest';
import type { Decision } from '../../lib/token-bucket/bucket.ts';
import { composeHeaderSets } from '../../sidecar/rate-limit-headers.ts';
import { MAX_KEY_BYTES, claimHeaderValue, rejectKey } from '../../sidecar/user-key.ts';

describe('USER-ID key rules', () => {
  it('accepts ordinary ids up to 256 bytes', () => {
    expect(rejectKey('alice')).toBeUndefined();
    expect(rejectKey('x'.repeat(MAX_KEY_BYTES))).toBeUndefined();
    expect(rejectKey('ünïcode-as-latin1')).toBeUndefined();
  });
  it('names each bad case', () => {
    expect(rejectKey(undefined)).toBe('missing');
    expect(rejectKey('')).toBe('empty');
    expect(rejectKey('x'.repeat(MAX_KEY_BYTES + 1))).toBe('too-long');
    expect(rejectKey('a\tb')).toBe('control-character');
    expect(rejectKey('a\x7fb')).toBe('control-character');
    expect(rejectKey('a\x00')).toBe('control-character');
  });
});

describe('a verified claim as the forwarded key header value', () => {
  it.each([
    ['alice', 'alice'],
    ['auth0|5f7c8ec7c33c6c004bbafe82', 'auth0|5f7c8ec7c33c6c004bbafe82'],
    ['zoë', 'zo%C3%AB'],
    ['漢字', '%E6%BC%A2%E5%AD%97'],
    ['😀', '%F0%9F%98%80'],
    [' alice ', '%20alice%20'],
    ['100%', '100%25'],
  ])('%s is forwarded as %s, which decodes back to it', (claim, forwarded) => {
    expect(claimHeaderValue(claim)).toBe(forwarded);
    expect(decodeURIComponent(forwarded)).toBe(claim);
    expect(forwarded).toMatch(/^[!-~]+$/);
  });
});

describe('rate-limit header sets', () => {
  const decision: Decision = {
    allowed: true,
    remaining: 42,
    limit: 100,
    cost: 3,
    retryAfterMs: 0,
    resetMs: 2900,
  };
  const ctx = {
    policyName: 'all',
    limits: [{ replenishRate: 20, burstCapacity: 100, requestedTokens: 3 }],
  };
  const render = (enabled: { fields: boolean; draft: boolean; spring: boolean }) => {
    const out: string[] = [];
    composeHeaderSets(enabled, ctx)(decision, out);
    const map: Record<string, string> = {};
    for (let i = 0; i < out.length; i += 2) map[out[i]!] = out[i + 1]!;
    return map;
  };

  it('the specification set (tokens; seconds rounded up)', () => {
    expect(render({ fields: true, draft: false, spring: false })).toEqual({
      'ratelimit-limit': '100',
      'ratelimit-remaining': '42',
      'ratelimit-reset': '3',
      'ratelimit-used': '58',
    });
  });
  it('the IETF draft-10 structured fields', () => {
    expect(render({ fields: false, draft: true, spring: false })).toEqual({
      'ratelimit-policy': '"all";q=100;w=5',
      ratelimit: '"all";r=42;t=3',
    });
  });
  it("Spring Cloud Gateway's X-RateLimit-* set", () => {
    expect(render({ fields: false, draft: false, spring: true })).toEqual({
      'x-ratelimit-remaining': '42',
      'x-ratelimit-replenish-rate': '20',
      'x-ratelimit-burst-capacity': '100',
      'x-ratelimit-requested-tokens': '3',
    });
  });
  it('none', () => {
    expect(render({ fields: false, draft: false, spring: false })).toEqual({});
  });
});
