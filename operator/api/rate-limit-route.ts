// RateLimitRoute: one gateway route. The zod schema is the single source:
// the operator parses with it, types are inferred from it, crds/ is generated from it.
// Cross-field rules are written twice on purpose: as a zod refinement (the operator's check) and
// as a CEL rule in `x-kubernetes-validations` (the API server's check, with the same message).
import { z } from 'zod';
import {
  API_VERSION,
  conditionsSchema,
  dnsSubdomain,
  dataKey,
  objectMetaSchema,
  observedGenerationSchema,
  secretKeyRefSchema,
  type CrdSource,
} from './common.ts';
import { limiterSchema } from './limiter.ts';
import { REDIS_URL_CREDENTIALS_PATTERN, redisUrlCredentialsMessage, redisUrlHasCredentials } from './redis-url.ts';

/** Kubernetes resource quantity (e.g. 100m, 64Mi, 1): an int or a string, as in a Pod spec. */
const QUANTITY = /^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;
const quantitySchema = z
  .union([z.int().min(0).max(1_000_000_000), z.string().min(1).max(64).regex(QUANTITY)])
  .meta({ 'x-kubernetes-int-or-string': true })
  .describe('A resource quantity such as 100m, 64Mi or 1.');

export const resourceListSchema = z
  .record(z.string().min(1).max(253), quantitySchema)
  .refine((r) => Object.keys(r).length <= 16, 'at most 16 resources')
  .meta({ maxProperties: 16 });

/** requests and limits of one container, as in a Pod spec. */
export const resourceRequirementsSchema = z.strictObject({
  limits: resourceListSchema.optional().describe('Maximum resources, e.g. {cpu: 500m, memory: 256Mi}.'),
  requests: resourceListSchema.optional().describe('Requested resources, e.g. {cpu: 50m, memory: 64Mi}.'),
});
export type ResourceRequirements = z.infer<typeof resourceRequirementsSchema>;

export const ENV_MAX = 64;
const envVarSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[-._a-zA-Z][-._a-zA-Z0-9]*$/)
      .describe('Name of the environment variable.'),
    value: z.string().max(4096).optional().describe('Literal value (at most 4 KiB: a route stays small in every cache that holds it).'),
    valueFrom: z
      .strictObject({
        secretKeyRef: secretKeyRefSchema.optional(),
        configMapKeyRef: z
          .strictObject({ name: dnsSubdomain.describe('Name of a ConfigMap.'), key: dataKey.describe('Key inside it.') })
          .optional()
          .describe('A key of a ConfigMap in the same namespace.'),
      })
      .refine((v) => (v.secretKeyRef === undefined) !== (v.configMapKeyRef === undefined), {
        message: 'set exactly one of secretKeyRef and configMapKeyRef',
      })
      .meta({
        'x-kubernetes-validations': [
          { rule: 'has(self.secretKeyRef) != has(self.configMapKeyRef)', message: 'set exactly one of secretKeyRef and configMapKeyRef' },
        ],
      })
      .optional()
      .describe('Take the value from a Secret or ConfigMap key.'),
  })
  .refine((e) => !(e.value !== undefined && e.valueFrom !== undefined), { message: 'set value or valueFrom, not both' })
  .meta({
    'x-kubernetes-validations': [{ rule: '!(has(self.value) && has(self.valueFrom))', message: 'set value or valueFrom, not both' }],
  })
  .describe('An environment variable of the target container.');

export const targetSchema = z
  .strictObject({
    image: z.string().min(1).max(1024).describe('Container image of the service the route forwards to, e.g. example/user-service:1.0.'),
    command: z
      .array(z.string().min(1).max(1024))
      .max(32)
      .optional()
      .describe('Entrypoint of the target container (optional; the image default otherwise).'),
    args: z.array(z.string().max(1024)).max(64).optional().describe('Arguments of the target container.'),
    port: z.int().min(1).max(65535).default(8080).describe('Port the target container listens on (the sidecar forwards to it over localhost).'),
    readinessPath: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^\//, 'must start with /')
      .default('/healthcheck/ready')
      .describe('HTTP path of the target readiness probe; it must answer 200 when the target is ready.'),
    replicas: z
      .int()
      .min(0)
      .max(100)
      .optional()
      .describe(
        'Number of pods (target + sidecar each); kubectl scale rlr and an HorizontalPodAutoscaler on the route (scale subresource) set it. Omit it to leave the count to an autoscaler of the Deployment itself: the operator then never writes replicas there (the Deployment starts with 1).',
      ),
    env: z
      .array(envVarSchema)
      .max(ENV_MAX)
      .optional()
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] })
      .describe('Environment variables passed to the target container.'),
    resources: resourceRequirementsSchema.optional().describe('Compute resources of the target container.'),
  })
  .describe('The service the route forwards to: one container beside the sidecar in each pod.');
export type Target = z.infer<typeof targetSchema>;

export const upstreamSchema = z
  .strictObject({
    service: z
      .strictObject({
        name: z
          .string()
          .min(1)
          .max(63)
          .regex(/^[a-z]([-a-z0-9]*[a-z0-9])?$/, 'must be a Service name (DNS-1035 label)')
          .describe('Name of a Service in the route namespace, e.g. the one a team chart installs.'),
        port: z.int().min(1).max(65535).describe('Port of that Service (its spec.ports[].port) the sidecars forward to.'),
      })
      .describe('The Service the sidecars forward to, as http://<name>.<namespace>.svc:<port>.'),
    replicas: z
      .int()
      .min(0)
      .max(100)
      .optional()
      .describe('Number of gateway pods (one sidecar each). Omit it to leave the count to an autoscaler of the gateway Deployment.'),
  })
  .describe(
    'An existing Service the route forwards to, instead of a target: the operator runs a gateway Deployment of sidecars only (resources from spec.sidecar) in front of it, and leaves the workload behind the Service alone.',
  );
export type Upstream = z.infer<typeof upstreamSchema>;

export const targetRefSchema = z
  .strictObject({
    name: dnsSubdomain.describe('Name of a Deployment in the route namespace, e.g. the one a team chart installs.'),
    port: z.int().min(1).max(65535).describe('Port the Deployment container listens on; the sidecar forwards to it over localhost.'),
  })
  .describe(
    "An existing Deployment to add the sidecar to, instead of a target: the operator adds only the sidecar container, its volumes, the pod-template config hash and the pod labels portcullis.dev/sidecar and portcullis.dev/route, under its own field manager (portcullis-operator-sidecar), points the route's Service at the sidecar, and removes exactly those fields when the route is deleted.",
  );
export type TargetRef = z.infer<typeof targetRefSchema>;

export const WORKLOAD_RULE = 'set exactly one of target, upstream and targetRef';
/** The route's own Service forwards to the gateway pods: as its upstream, every request would loop through them. */
export const UPSTREAM_SELF_RULE = "spec.upstream.service cannot be the route's own Service (it has the route's name): the gateway would forward to itself";
/** A transition rule (CEL only: zod never sees the old object): the injected sidecar is removed only when the route is deleted. */
export const TARGET_REF_IMMUTABLE_RULE = 'targetRef cannot be added, removed or renamed; create a new RateLimitRoute';

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
      .describe('Redis URL, e.g. redis://redis:6379, without credentials (user:password@): a URL with them is refused, give it through secretRef.'),
    secretRef: secretKeyRefSchema.optional().describe('A Secret key holding the Redis URL (for URLs with credentials). Mounted read-only into the sidecar; a rotated Secret is picked up without a restart.'),
  })
  .refine((r) => (r.url === undefined) !== (r.secretRef === undefined), { message: REDIS_RULE })
  .meta({
    'x-kubernetes-validations': [
      { rule: 'has(self.url) != has(self.secretRef)', message: REDIS_RULE },
      // url's twin, written on the object with a fieldPath: the API server quotes the value of a
      // string that fails its own rule (or a pattern) in the error, password included, not so here.
      { rule: `!has(self.url) || !self.url.matches(r'${REDIS_URL_CREDENTIALS_PATTERN}')`, message: REDIS_URL_CREDENTIALS_RULE, fieldPath: '.url' },
    ],
  })
  .describe('Where bucket state lives. Omit to use the operator default Redis (Helm value redis.url).');
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
      .describe('Merge runs of / in the request path into one before matching, and forward the merged path (true when omitted). false keeps them, for a service that tells /a//b from /a/b; a path starting with // is refused either way.'),
    caseInsensitivePaths: z
      .boolean()
      .optional()
      .describe('Match the route and rule paths without regard to letter case, for a service whose routing ignores case (false when omitted). The path is forwarded as sent.'),
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
      .describe("PriorityClass of the route's pods; omit for the operator default (Helm value priorityClassName)."),
  })
  .refine((s) => [s.target, s.upstream, s.targetRef].filter((w) => w !== undefined).length === 1, { message: WORKLOAD_RULE })
  .meta({
    'x-kubernetes-validations': [
      { rule: '[has(self.target), has(self.upstream), has(self.targetRef)].filter(x, x).size() == 1', message: WORKLOAD_RULE },
      { rule: 'has(self.targetRef) == has(oldSelf.targetRef) && (!has(self.targetRef) || self.targetRef.name == oldSelf.targetRef.name)', message: TARGET_REF_IMMUTABLE_RULE },
    ],
  })
  .describe('Desired state of the route: the target service (or an existing upstream Service), the path predicate and the limiter.');
export type RateLimitRouteSpec = z.infer<typeof rateLimitRouteSpecSchema>;

export const rateLimitRouteStatusSchema = z
  .strictObject({
    observedGeneration: observedGenerationSchema.optional(),
    conditions: conditionsSchema.optional(),
    readyReplicas: z.int().min(0).max(1000).optional().describe('Pods of the route whose containers are all ready (from the Deployment).'),
    replicas: z.int().min(0).max(1000).optional().describe('Pods of the route, ready or not (from the Deployment): the scale subresource reports it.'),
    selector: z.string().max(1024).optional().describe('Label selector of the route pods, for the scale subresource (an HorizontalPodAutoscaler finds the pods to measure with it).'),
    service: dnsSubdomain.max(63).optional().describe('Name of the Service in front of the sidecars.'),
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
  .refine((r) => r.spec.upstream === undefined || r.spec.upstream.service.name !== r.metadata.name, { message: UPSTREAM_SELF_RULE, path: ['spec', 'upstream', 'service', 'name'] });
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
  scale: { specReplicasPath: '.spec.target.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
  rootValidations: [
    { rule: '!has(self.spec.upstream) || self.spec.upstream.service.name != self.metadata.name', message: UPSTREAM_SELF_RULE },
    {
      rule: "self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
      message: 'name must be a DNS-1035 label (lower case, starts with a letter, at most 63 characters): it names the route Service and Deployment',
    },
    { rule: `!(self.metadata.name in [${RESERVED_ROUTE_NAMES.map((n) => `'${n}'`).join(', ')}])`, message: RESERVED_ROUTE_NAME_RULE },
  ],
  printerColumns: [
    { name: 'Key', type: 'string', jsonPath: '.spec.limiter.key.source', description: 'Where the bucket key comes from: header or jwt' },
    { name: 'Rate', type: 'integer', jsonPath: '.spec.limiter.replenishRate', description: 'Single-limit form: tokens restored per second (empty with rules)' },
    { name: 'Burst', type: 'integer', jsonPath: '.spec.limiter.burstCapacity', description: 'Single-limit form: bucket size (empty with rules)' },
    { name: 'Cost', type: 'integer', jsonPath: '.spec.limiter.requestedTokens', description: 'Single-limit form: tokens per request (empty: 1)' },
    { name: 'Enforce', type: 'boolean', jsonPath: '.spec.limiter.enforce', description: 'false: shadow mode, nothing is refused' },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas', description: 'Ready pods' },
    { name: 'Status', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status', description: 'Ready condition' },
    { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason', description: 'Why', priority: 1 },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Age' },
  ],
};
