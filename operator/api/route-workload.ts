// What a RateLimitRoute forwards to, exactly one of: target (a container the operator runs beside
// the sidecar), upstream (an existing Service, behind a gateway of sidecars) or targetRef (an
// existing Deployment the sidecar is added to); with the rules that tie them to the route.
import { z } from 'zod';
import { dnsSubdomain } from './common.ts';
import { ENV_MAX, envVarSchema, resourceRequirementsSchema } from './container.ts';

export const targetSchema = z
  .strictObject({
    image: z
      .string()
      .min(1)
      .max(1024)
      .describe(
        'Container image of the service the route forwards to, e.g. example/user-service:1.0.',
      ),
    command: z
      .array(z.string().min(1).max(1024))
      .max(32)
      .optional()
      .describe('Entrypoint of the target container (optional; the image default otherwise).'),
    args: z
      .array(z.string().max(1024))
      .max(64)
      .optional()
      .describe('Arguments of the target container.'),
    port: z
      .int()
      .min(1)
      .max(65535)
      .default(8080)
      .describe(
        'Port the target container listens on (the sidecar forwards to it over localhost).',
      ),
    readinessPath: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^\//, 'must start with /')
      .default('/healthcheck/ready')
      .describe(
        'HTTP path of the target readiness probe; it must answer 200 when the target is ready.',
      ),
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
    resources: resourceRequirementsSchema
      .optional()
      .describe('Compute resources of the target container.'),
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
          .describe(
            'Name of a Service in the route namespace, e.g. the one a team chart installs.',
          ),
        port: z
          .int()
          .min(1)
          .max(65535)
          .describe('Port of that Service (its spec.ports[].port) the sidecars forward to.'),
      })
      .describe('The Service the sidecars forward to, as http://<name>.<namespace>.svc:<port>.'),
    replicas: z
      .int()
      .min(0)
      .max(100)
      .optional()
      .describe(
        'Number of gateway pods (one sidecar each). Omit it to leave the count to an autoscaler of the gateway Deployment.',
      ),
  })
  .describe(
    'An existing Service the route forwards to, instead of a target: the operator runs a gateway Deployment of sidecars only (resources from spec.sidecar) in front of it, and leaves the workload behind the Service alone.',
  );
export type Upstream = z.infer<typeof upstreamSchema>;

export const targetRefSchema = z
  .strictObject({
    name: dnsSubdomain.describe(
      'Name of a Deployment in the route namespace, e.g. the one a team chart installs.',
    ),
    port: z
      .int()
      .min(1)
      .max(65535)
      .describe(
        'Port the Deployment container listens on; the sidecar forwards to it over localhost.',
      ),
  })
  .describe(
    "An existing Deployment to add the sidecar to, instead of a target: the operator adds only the sidecar container, its volumes, the pod-template config hash and the pod labels portcullis.dev/sidecar and portcullis.dev/route, under its own field manager (portcullis-operator-sidecar), points the route's Service at the sidecar, and removes exactly those fields when the route is deleted.",
  );
export type TargetRef = z.infer<typeof targetRefSchema>;

export const WORKLOAD_RULE = 'set exactly one of target, upstream and targetRef';
/** The route's own Service forwards to the gateway pods: as its upstream, every request would loop through them. */
export const UPSTREAM_SELF_RULE =
  "spec.upstream.service cannot be the route's own Service (it has the route's name): the gateway would forward to itself";
/** A transition rule (CEL only: zod never sees the old object): the injected sidecar is removed only when the route is deleted. */
export const TARGET_REF_IMMUTABLE_RULE =
  'targetRef cannot be added, removed or renamed; create a new RateLimitRoute';
