// RateLimitRoute: one gateway route. The zod schema is the single source:
// the operator parses with it, types are inferred from it, crds/ is generated from it. What the
// route forwards to is in route-workload.ts, the container settings in container.ts.
// Cross-field rules are written twice on purpose: as a zod refinement (the operator's check) and
// as a CEL rule in `x-kubernetes-validations` (the API server's check, with the same message).
import { z } from 'zod';
import {
  API_VERSION,
  conditionsSchema,
  dnsSubdomain,
  objectMetaSchema,
  observedGenerationSchema,
  secretKeyRefSchema,
  type CrdSource,
} from './common.ts';
import { resourceRequirementsSchema } from './container.ts';
import { limiterSchema } from './limiter.ts';
import {
  REDIS_URL_CREDENTIALS_PATTERN,
  redisUrlCredentialsMessage,
  redisUrlHasCredentials,
} from './redis-url.ts';
import {
  TARGET_REF_IMMUTABLE_RULE,
  targetRefSchema,
  targetSchema,
  UPSTREAM_SELF_RULE,
  upstreamSchema,
  WORKLOAD_RULE,
} from './route-workload.ts';

export const REDIS_RULE = 'set exactly one of url and secretRef';
/** The sidecar config (a ConfigMap) carries spec.redis.url, so a password must come through secretRef. */
export const REDIS_URL_CREDENTIALS_RULE = redisUrlCredentialsMessage('spec.redis.secretRef');
export const redisSchema = z
  .strictObject({
    url: z
      .string()
      .min(1)
      .max(2048)
      .regex(/^rediss?:\/\/\S+$/, 'must be a redis:// or rediss:// URL')
      .refine((url) => !redisUrlHasCredentials(url), REDIS_URL_CREDENTIALS_RULE)
      .optional()
      .describe(
        'Redis URL, e.g. redis://redis:6379, without credentials (user:password@): a URL with them is refused, give it through secretRef.',
      ),
    secretRef: secretKeyRefSchema
      .optional()
      .describe(
        'A Secret key holding the Redis URL (for URLs with credentials). Mounted read-only into the sidecar; a rotated Secret is picked up without a restart.',
      ),
  })
  .refine((r) => (r.url === undefined) !== (r.secretRef === undefined), { message: REDIS_RULE })
  .meta({
    'x-kubernetes-validations': [
      { rule: 'has(self.url) != has(self.secretRef)', message: REDIS_RULE },
      // url's twin, written on the object with a fieldPath: the API server quotes the value of a
      // string that fails its own rule (or a pattern) in the error, password included, not so here.
      {
        rule: `!has(self.url) || !self.url.matches(r'${REDIS_URL_CREDENTIALS_PATTERN}')`,
        message: REDIS_URL_CREDENTIALS_RULE,
        fieldPath: '.url',
      },
    ],
  })
  .describe(
    'Where bucket state lives. Omit to use the operator default Redis (Helm value redis.url).',
  );
export type RedisRef = z.infer<typeof redisSchema>;

export const rateLimitRouteSpecSchema = z
  .strictObject({
    target: targetSchema.optional(),
    upstream: upstreamSchema.optional(),
    targetRef: targetRefSchema.optional(),
    path: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^\//, 'must start with /')
      .default('/**')
      .describe(
        'Ant-style path predicate of the route, e.g. /** (every path) or /api/**. The route and its rules match the canonical request path (escapes of unreserved characters decoded, dot-segments resolved, runs of / merged unless mergeSlashes is false), which is also the path forwarded; a target that cannot be made canonical (#, a backslash, an escaped / or \\) is refused with 400.',
      ),
    mergeSlashes: z
      .boolean()
      .optional()
      .describe(
        'Merge runs of / in the request path into one before matching, and forward the merged path (true when omitted). false keeps them, for a service that tells /a//b from /a/b; a path starting with // is refused either way.',
      ),
    caseInsensitivePaths: z
      .boolean()
      .optional()
      .describe(
        'Match the route and rule paths without regard to letter case, for a service whose routing ignores case (false when omitted). The path is forwarded as sent.',
      ),
    limiter: limiterSchema,
    redis: redisSchema.optional(),
    sidecar: z
      .strictObject({
        resources: resourceRequirementsSchema
          .optional()
          .describe(
            "Compute resources of the sidecar container. requests and limits each replace the operator's default list (Helm value routes.sidecarResources) when given. The sidecar's V8 old space is capped at half of limits.memory.",
          ),
      })
      .optional()
      .describe('Settings of the rate-limiting sidecar container of each pod.'),
    networkPolicy: z
      .strictObject({
        enabled: z
          .boolean()
          .default(true)
          .describe(
            "false: no NetworkPolicy for this route, so whatever the route protects is reachable around the limiter again (a target's or targetRef's own port on the pod IP, the upstream Service's pods directly). Only the operator's setting (Helm value routes.networkPolicy.enabled) can turn it off for every route.",
          ),
      })
      .optional()
      .describe(
        "NetworkPolicies that keep the limiter from being walked around, on by default: the route's pods (its own, or a targetRef Deployment's pods once they run the sidecar) admit ingress only on the sidecar's proxy and admin ports, and with upstream the pods the upstream Service selects admit ingress only from the route's gateway pods. They take effect only where the cluster's CNI enforces NetworkPolicies.",
      ),
    priorityClassName: dnsSubdomain
      .optional()
      .describe(
        "PriorityClass of the route's pods; omit for the operator default (Helm value priorityClassName).",
      ),
  })
  .refine((s) => [s.target, s.upstream, s.targetRef].filter((w) => w !== undefined).length === 1, {
    message: WORKLOAD_RULE,
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: '[has(self.target), has(self.upstream), has(self.targetRef)].filter(x, x).size() == 1',
        message: WORKLOAD_RULE,
      },
      {
        rule: 'has(self.targetRef) == has(oldSelf.targetRef) && (!has(self.targetRef) || self.targetRef.name == oldSelf.targetRef.name)',
        message: TARGET_REF_IMMUTABLE_RULE,
      },
    ],
  })
  .describe(
    'Desired state of the route: the target service (or an existing upstream Service), the path predicate and the limiter.',
  );
export type RateLimitRouteSpec = z.infer<typeof rateLimitRouteSpecSchema>;

export const rateLimitRouteStatusSchema = z
  .strictObject({
    observedGeneration: observedGenerationSchema.optional(),
    conditions: conditionsSchema.optional(),
    readyReplicas: z
      .int()
      .min(0)
      .max(1000)
      .optional()
      .describe('Pods of the route whose containers are all ready (from the Deployment).'),
    replicas: z
      .int()
      .min(0)
      .max(1000)
      .optional()
      .describe(
        'Pods of the route, ready or not (from the Deployment): the scale subresource reports it.',
      ),
    selector: z
      .string()
      .max(1024)
      .optional()
      .describe(
        'Label selector of the route pods, for the scale subresource (an HorizontalPodAutoscaler finds the pods to measure with it).',
      ),
    service: dnsSubdomain
      .max(63)
      .optional()
      .describe('Name of the Service in front of the sidecars.'),
  })
  .describe('Observed state of the route, written by the operator.');
export type RateLimitRouteStatus = z.infer<typeof rateLimitRouteStatusSchema>;

/**
 * Route names whose children would carry the names of the namespace's auth-server objects (its
 * Deployment, Service and policies; `<route>-redis` its Redis Secret): the two controllers would
 * delete and recreate each other's objects forever.
 */
export const RESERVED_ROUTE_NAMES = ['portcullis-auth-server', 'portcullis-auth'] as const;
export const RESERVED_ROUTE_NAME_RULE = `the names ${RESERVED_ROUTE_NAMES.join(' and ')} are reserved for the namespace's auth server; give the RateLimitRoute another name`;

export const RATE_LIMIT_ROUTE_KIND = 'RateLimitRoute';
export const RATE_LIMIT_ROUTE_PLURAL = 'ratelimitroutes';

export const rateLimitRouteSchema = z
  .object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal(RATE_LIMIT_ROUTE_KIND),
    metadata: objectMetaSchema,
    spec: rateLimitRouteSpecSchema,
    status: rateLimitRouteStatusSchema.optional(),
  })
  .refine(
    (r) => r.spec.upstream === undefined || r.spec.upstream.service.name !== r.metadata.name,
    { message: UPSTREAM_SELF_RULE, path: ['spec', 'upstream', 'service', 'name'] },
  );
export type RateLimitRoute = z.infer<typeof rateLimitRouteSchema>;

export const rateLimitRouteCrd: CrdSource = {
  kind: RATE_LIMIT_ROUTE_KIND,
  plural: RATE_LIMIT_ROUTE_PLURAL,
  singular: 'ratelimitroute',
  shortNames: ['rlr'],
  categories: ['portcullis'],
  description:
    'RateLimitRoute puts a per-user token-bucket rate limiter (a sidecar with state in Redis) in front of a service. The operator creates a Deployment (target + sidecar; with spec.upstream, sidecars only in front of an existing Service), a ConfigMap with the sidecar config and a Service. It never adopts an object of the same name it did not create (Ready reason Conflict).',
  spec: rateLimitRouteSpecSchema,
  status: rateLimitRouteStatusSchema,
  scale: {
    specReplicasPath: '.spec.target.replicas',
    statusReplicasPath: '.status.replicas',
    labelSelectorPath: '.status.selector',
  },
  rootValidations: [
    {
      rule: '!has(self.spec.upstream) || self.spec.upstream.service.name != self.metadata.name',
      message: UPSTREAM_SELF_RULE,
    },
    {
      rule: "self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
      message:
        'name must be a DNS-1035 label (lower case, starts with a letter, at most 63 characters): it names the route Service and Deployment',
    },
    {
      rule: `!(self.metadata.name in [${RESERVED_ROUTE_NAMES.map((n) => `'${n}'`).join(', ')}])`,
      message: RESERVED_ROUTE_NAME_RULE,
    },
  ],
  printerColumns: [
    {
      name: 'Key',
      type: 'string',
      jsonPath: '.spec.limiter.key.source',
      description: 'Where the bucket key comes from: header or jwt',
    },
    {
      name: 'Rate',
      type: 'integer',
      jsonPath: '.spec.limiter.replenishRate',
      description: 'Single-limit form: tokens restored per second (empty with rules)',
    },
    {
      name: 'Burst',
      type: 'integer',
      jsonPath: '.spec.limiter.burstCapacity',
      description: 'Single-limit form: bucket size (empty with rules)',
    },
    {
      name: 'Cost',
      type: 'integer',
      jsonPath: '.spec.limiter.requestedTokens',
      description: 'Single-limit form: tokens per request (empty: 1)',
    },
    {
      name: 'Enforce',
      type: 'boolean',
      jsonPath: '.spec.limiter.enforce',
      description: 'false: shadow mode, nothing is refused',
    },
    {
      name: 'Ready',
      type: 'integer',
      jsonPath: '.status.readyReplicas',
      description: 'Ready pods',
    },
    {
      name: 'Status',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].status',
      description: 'Ready condition',
    },
    {
      name: 'Reason',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      description: 'Why',
      priority: 1,
    },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Age' },
  ],
};
