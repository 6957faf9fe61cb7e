// RateLimitPolicy: the limiter attached to Gateway API routes (direct policy attachment). The
// operator runs a decision service for the policy and, where the installed HTTPRoute CRD has the
// ExternalAuth filter, points the targeted rules at it. The zod schema is the single source, as
// for the other kinds (crds/ is generated from it); see docs/adr/0021.
import { z } from 'zod';
import {
  API_VERSION,
  conditionsSchema,
  dnsSubdomain,
  objectMetaSchema,
  type CrdSource,
} from './common.ts';
import { limiterSchema } from './limiter.ts';
import { redisSchema } from './rate-limit-route.ts';

export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';
export const POLICY_TARGET_KINDS = ['HTTPRoute', 'Gateway'] as const;
export type PolicyTargetKind = (typeof POLICY_TARGET_KINDS)[number];

/** Gateway API's SectionName: a rule name of an HTTPRoute, a listener name of a Gateway. */
const sectionName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);

/** Policies act in their own namespace only: a reference naming another is refused at admission. */
export const TARGET_NAMESPACE_RULE =
  "targetRefs name objects in the policy's own namespace only: remove namespace";

export const policyTargetRefSchema = z
  .strictObject({
    group: z
      .literal(GATEWAY_API_GROUP)
      .describe('API group of the target: gateway.networking.k8s.io.'),
    kind: z
      .enum(POLICY_TARGET_KINDS)
      .describe('HTTPRoute (its rules are wired to the decision service) or Gateway.'),
    name: dnsSubdomain.describe("Name of the target in the policy's namespace."),
    sectionName: sectionName
      .optional()
      .describe(
        'With an HTTPRoute: the name of one of its rules (spec.rules[].name), to limit that rule only. Omit for every rule.',
      ),
    namespace: z
      .string()
      .max(63)
      .optional()
      .describe(
        'Not allowed: a policy attaches to objects of its own namespace only (the API server refuses it; present only so that it is refused rather than dropped).',
      ),
  })
  .describe('A Gateway API object the policy attaches to (direct policy attachment).');
export type PolicyTargetRef = z.infer<typeof policyTargetRefSchema>;

export const DECISION_REPLICAS_DEFAULT = 2;

export const rateLimitPolicySpecSchema = z
  .strictObject({
    targetRefs: z
      .array(policyTargetRefSchema)
      .min(1)
      .max(16)
      .describe(
        'The HTTPRoutes (or rules of them) and Gateways of this namespace whose requests the limiter decides on.',
      ),
    limiter: limiterSchema,
    redis: redisSchema.optional(),
    replicas: z
      .int()
      .min(1)
      .max(100)
      .default(DECISION_REPLICAS_DEFAULT)
      .describe(
        'Pods of the decision service (2 when omitted: the gateway asks it about every request). They share buckets only through Redis.',
      ),
  })
  .describe('The targets and the limiter of the policy.');
export type RateLimitPolicySpec = z.infer<typeof rateLimitPolicySpecSchema>;

/** Gateway API's ParentReference as PolicyAncestorStatus uses it. */
const ancestorRefSchema = z.strictObject({
  group: z.string().max(253).optional(),
  kind: z.string().max(63).optional(),
  namespace: z.string().max(63).optional(),
  name: z.string().min(1).max(253),
  sectionName: z.string().max(253).optional(),
  port: z.int().min(1).max(65535).optional(),
});

export const policyAncestorStatusSchema = z
  .strictObject({
    ancestorRef: ancestorRefSchema.describe(
      'The Gateway the status is about (the parent of a targeted HTTPRoute, or the targeted Gateway); the target itself when it was not found.',
    ),
    controllerName: z
      .string()
      .min(1)
      .max(253)
      .describe('The controller that wrote this entry: portcullis.dev/operator.'),
    conditions: conditionsSchema.describe(
      'Accepted (True, or False with TargetNotFound, Conflicted or Invalid) and portcullis.dev/Wired (whether the gateway calls the decision service).',
    ),
  })
  .describe('The status of the policy for one ancestor, as Gateway API policies report it.');
export type PolicyAncestorStatus = z.infer<typeof policyAncestorStatusSchema>;

export const rateLimitPolicyStatusSchema = z
  .strictObject({
    ancestors: z
      .array(policyAncestorStatusSchema)
      .max(16)
      .optional()
      .describe('One entry per ancestor the policy is about, at most 16.'),
    service: dnsSubdomain
      .max(63)
      .optional()
      .describe(
        'Name of the decision Service (gRPC ext_authz on port grpc, HTTP ext_authz and forward-auth on port http).',
      ),
  })
  .describe('Observed state of the policy, written by the operator.');
export type RateLimitPolicyStatus = z.infer<typeof rateLimitPolicyStatusSchema>;

export const RATE_LIMIT_POLICY_KIND = 'RateLimitPolicy';
export const RATE_LIMIT_POLICY_PLURAL = 'ratelimitpolicies';
/** The children are named `<policy>-decision`: a policy name leaves room for the suffix in a DNS-1035 label. */
export const POLICY_NAME_MAX = 54;

export const rateLimitPolicySchema = z
  .object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal(RATE_LIMIT_POLICY_KIND),
    metadata: objectMetaSchema,
    spec: rateLimitPolicySpecSchema,
    status: z.unknown().optional(),
  })
  .refine((p) => p.metadata.name.length <= POLICY_NAME_MAX, {
    message: `name is at most ${POLICY_NAME_MAX} characters`,
    path: ['metadata', 'name'],
  });
export type RateLimitPolicy = z.infer<typeof rateLimitPolicySchema>;

export const rateLimitPolicyCrd: CrdSource = {
  kind: RATE_LIMIT_POLICY_KIND,
  plural: RATE_LIMIT_POLICY_PLURAL,
  singular: 'ratelimitpolicy',
  shortNames: ['rlp'],
  categories: ['portcullis', 'gateway-api'],
  description:
    "RateLimitPolicy attaches Portcullis's per-user token-bucket limiter to Gateway API HTTPRoutes (or one rule of them) and Gateways of its namespace. The operator runs a decision service for it (Envoy ext_authz gRPC and HTTP, forward-auth) and, where the installed HTTPRoute CRD has the ExternalAuth filter, adds that filter to the targeted rules; status.ancestors says per Gateway whether the policy is accepted and wired.",
  spec: rateLimitPolicySpecSchema,
  status: rateLimitPolicyStatusSchema,
  rootValidations: [
    {
      rule: `self.metadata.name.size() <= ${POLICY_NAME_MAX} && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')`,
      message: `name must be a DNS-1035 label of at most ${POLICY_NAME_MAX} characters: it names the decision Service (<name>-decision)`,
    },
    { rule: 'self.spec.targetRefs.all(r, !has(r.namespace))', message: TARGET_NAMESPACE_RULE },
  ],
  printerColumns: [
    {
      name: 'Target',
      type: 'string',
      jsonPath: '.spec.targetRefs[0].name',
      description: 'The first target',
    },
    {
      name: 'Accepted',
      type: 'string',
      jsonPath: '.status.ancestors[0].conditions[?(@.type=="Accepted")].reason',
      description: 'Accepted reason for the first ancestor',
    },
    {
      name: 'Service',
      type: 'string',
      jsonPath: '.status.service',
      description: 'The decision Service',
      priority: 1,
    },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Age' },
  ],
};
