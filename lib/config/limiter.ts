// The limiter pieces the sidecar's config (lib/config/sidecar-limiter.ts) and the RateLimitRoute
// CRD's spec.limiter (operator/api/limiter.ts, rendered into the former by the operator) share:
// bounds, name patterns and every cross-field rule. Each rule is written once here, as a predicate
// (zod's check, in the sidecar and the operator) with its message and, where the API server checks
// it too, its CEL twin, so that all three say the same thing.

/** Most token buckets one rule may carry (every one is read and written in the same atomic call). */
export const MAX_LIMITS_PER_RULE = 4;
/** Most rules one route may hold (each request walks them in order until one matches). */
export const MAX_RULES = 32;

/** A rule name: a DNS label, since it becomes part of bucket keys and policy names. */
export const RULE_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const RULE_NAME_PROBLEM =
  'must be lower-case letters, digits and dashes, starting and ending with a letter or digit';
export const RULE_NAME_MAX = 63;

/** An HTTP header name (an RFC 9110 token). */
export const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
export const HEADER_NAME_PROBLEM = 'must be an HTTP header name';
export const DEFAULT_KEY_HEADER = 'USER-ID';

/** What a request no rule matches gets: forwarded without a limit, or 404 problem+json. */
export const UNMATCHED = ['forward', 'refuse'] as const;
/** When the store is down or slow: fail open, or 503 problem+json. */
export const ON_STORE_ERROR = ['allow', 'deny'] as const;
/** Status bounds of the problem+json answer to a request without a usable key. */
export const MISSING_KEY_STATUS = { min: 400, max: 499, default: 400 } as const;

/**
 * A cross-field rule: `holds` is zod's check, `message` what both checks say when it fails, `cel`
 * the API server's twin (absent when only zod checks it), `field` the field the failure is
 * reported on (a zod path and a CEL fieldPath), the object itself when absent.
 */
export interface LimiterRule<T> {
  readonly message: string;
  readonly holds: (value: T) => boolean;
  readonly cel?: string;
  readonly field?: string;
}

type Costs = { requestedTokens?: number | undefined; burstCapacity?: number | undefined };
type Forms = Costs & { replenishRate?: number | undefined; rules?: readonly unknown[] | undefined };

const unique = (values: readonly string[]) => new Set(values).size === values.length;
const hasSingleForm = (l: Forms) =>
  l.replenishRate !== undefined || l.burstCapacity !== undefined || l.requestedTokens !== undefined;
const SINGLE_FORM_CEL =
  '(has(self.replenishRate) || has(self.burstCapacity) || has(self.requestedTokens))';

/** requestedTokens <= burstCapacity where both are set (absent requestedTokens means 1). */
export const requestedTokensRule: LimiterRule<Costs> = {
  message: 'requestedTokens must not exceed burstCapacity: such a request could never be admitted',
  holds: (l) =>
    l.requestedTokens === undefined ||
    l.burstCapacity === undefined ||
    l.requestedTokens <= l.burstCapacity,
  cel: '!has(self.requestedTokens) || !has(self.burstCapacity) || self.requestedTokens <= self.burstCapacity',
  field: 'requestedTokens',
};

/** Rules, or the single-limit form, never both and never neither. */
export const limiterFormRule: LimiterRule<Forms> = {
  message:
    'set exactly one of rules and the single-limit form (replenishRate, burstCapacity, requestedTokens)',
  holds: (l) => (l.rules !== undefined) !== hasSingleForm(l),
  cel: `has(self.rules) != ${SINGLE_FORM_CEL}`,
};

/** The single-limit form, when used, names a rate and a size. */
export const singleLimitRule: LimiterRule<Forms> = {
  message: 'the single-limit form needs replenishRate and burstCapacity',
  holds: (l) =>
    l.rules !== undefined ||
    !hasSingleForm(l) ||
    (l.replenishRate !== undefined && l.burstCapacity !== undefined),
  cel: `has(self.rules) || !${SINGLE_FORM_CEL} || (has(self.replenishRate) && has(self.burstCapacity))`,
};

/** Rule names are unique in a route (they key the buckets). */
export const ruleNamesRule: LimiterRule<readonly { readonly name: string }[]> = {
  message: 'rule names must be unique',
  holds: (rules) => unique(rules.map((r) => r.name)),
  cel: 'self.all(r, self.exists_one(s, s.name == r.name))',
};

/** A rule lists each method once (the CRD's list is a set). */
export const methodsRule: LimiterRule<readonly string[]> = {
  message: 'methods must be unique',
  holds: unique,
};

/** The CRD's key: claim, audience and issuer belong to source jwt. */
export const keyJwtFieldsRule: LimiterRule<{
  source: string;
  claim?: unknown;
  audience?: unknown;
  issuer?: unknown;
}> = {
  message: 'claim, audience and issuer apply only to source jwt',
  holds: (k) =>
    k.source === 'jwt' ||
    (k.claim === undefined && k.audience === undefined && k.issuer === undefined),
  cel: "self.source == 'jwt' || (!has(self.claim) && !has(self.audience) && !has(self.issuer))",
};

/** The sidecar's key: the jwt settings come with key jwt, and only then. */
export const jwtSettingsRule: LimiterRule<{ key: string; jwt?: unknown }> = {
  message: 'jwt settings are required with key jwt, and only then',
  holds: (l) => (l.key === 'jwt') === (l.jwt !== undefined),
  field: 'jwt',
};

/** zod's refine parameters for `rule`: its message and, when it names one, its field. */
export function refineParams(rule: LimiterRule<never>): { message: string; path?: string[] } {
  return rule.field === undefined
    ? { message: rule.message }
    : { message: rule.message, path: [rule.field] };
}

/** The `x-kubernetes-validations` entry for `rule` (which must have a CEL twin). */
export function celValidation(rule: LimiterRule<never>): {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: string;
} {
  if (rule.cel === undefined) throw new Error(`no CEL twin for: ${rule.message}`);
  return rule.field === undefined
    ? { rule: rule.cel, message: rule.message }
    : {
        rule: rule.cel,
        message: rule.message,
        fieldPath: `.${rule.field}`,
        reason: 'FieldValueInvalid',
      };
}
