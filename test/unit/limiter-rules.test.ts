// The limiter's cross-field rules (lib/config/limiter.ts) are written once: the sidecar's config,
// the operator's check of spec.limiter and the CRD's CEL rules all give the same message for the
// same mistake.
import { describe, expect, it } from 'vitest';
import {
  celValidation,
  limiterFormRule,
  requestedTokensRule,
  ruleNamesRule,
  singleLimitRule,
  type LimiterRule,
} from '../../lib/config/limiter.ts';
import { parseSidecarConfig } from '../../lib/config/sidecar.ts';
import { crdSources, limiterSchema } from '../../operator/api/index.ts';
import { buildCrd } from '../../scripts/crds/build-crd.ts';

const limit = { replenishRate: 1, burstCapacity: 2 };
const mistakes: [string, Record<string, unknown>, LimiterRule<never>][] = [
  ['both forms at once', { ...limit, rules: [{ name: 'a', limits: [limit] }] }, limiterFormRule],
  ['neither form', { keyHeader: 'X-User' }, limiterFormRule],
  [
    'a single form without burstCapacity',
    { replenishRate: 1, requestedTokens: 1 },
    singleLimitRule,
  ],
  ['requestedTokens above burstCapacity', { ...limit, requestedTokens: 3 }, requestedTokensRule],
  [
    'requestedTokens above burstCapacity in a rule',
    { rules: [{ name: 'a', limits: [{ ...limit, requestedTokens: 3 }] }] },
    requestedTokensRule,
  ],
  [
    'a rule name twice',
    {
      rules: [
        { name: 'a', limits: [limit] },
        { name: 'a', limits: [limit] },
      ],
    },
    ruleNamesRule,
  ],
];

/** Every message of the issues `value` fails `schema` with. */
function messages(
  schema: {
    safeParse(v: unknown): { success: boolean; error?: { issues: { message: string }[] } };
  },
  value: unknown,
): string[] {
  return schema.safeParse(value).error?.issues.map((i) => i.message) ?? [];
}

describe('limiter rules, written once', () => {
  it.each(mistakes)('%s: the sidecar and the operator say the same', (_what, limiter, rule) => {
    expect(messages(limiterSchema, limiter)).toEqual([rule.message]);
    expect(() =>
      parseSidecarConfig({
        upstream: { url: 'http://127.0.0.1:8081' },
        route: { id: 'r' },
        limiter,
      }),
    ).toThrow(rule.message);
  });

  it('every rule with a CEL twin is in the generated RateLimitRoute CRD with the same message', () => {
    const route = crdSources.find((s) => s.kind === 'RateLimitRoute');
    if (route === undefined) throw new Error('no RateLimitRoute source');
    const crd = JSON.stringify(buildCrd(route));
    for (const rule of [limiterFormRule, singleLimitRule, requestedTokensRule, ruleNamesRule]) {
      const { rule: cel, message } = celValidation(rule);
      expect(crd).toContain(JSON.stringify({ rule: cel, message }).slice(1, -1));
    }
  });
});
