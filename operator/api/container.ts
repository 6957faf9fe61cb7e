// The parts of a container that a RateLimitRoute sets, as in a Pod spec: compute resources (of the
// target and of the sidecar) and the target's environment variables. Cross-field rules are written
// twice, as in rate-limit-route.ts: a zod refinement and a CEL rule with the same message.
import { z } from 'zod';
import { dataKey, dnsSubdomain, secretKeyRefSchema } from './common.ts';

/** Kubernetes resource quantity (e.g. 100m, 64Mi, 1): an int or a string, as in a Pod spec. */
const QUANTITY =
  /^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;
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
  limits: resourceListSchema
    .optional()
    .describe('Maximum resources, e.g. {cpu: 500m, memory: 256Mi}.'),
  requests: resourceListSchema
    .optional()
    .describe('Requested resources, e.g. {cpu: 50m, memory: 64Mi}.'),
});
export type ResourceRequirements = z.infer<typeof resourceRequirementsSchema>;

export const ENV_MAX = 64;
export const envVarSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[-._a-zA-Z][-._a-zA-Z0-9]*$/)
      .describe('Name of the environment variable.'),
    value: z
      .string()
      .max(4096)
      .optional()
      .describe('Literal value (at most 4 KiB: a route stays small in every cache that holds it).'),
    valueFrom: z
      .strictObject({
        secretKeyRef: secretKeyRefSchema.optional(),
        configMapKeyRef: z
          .strictObject({
            name: dnsSubdomain.describe('Name of a ConfigMap.'),
            key: dataKey.describe('Key inside it.'),
          })
          .optional()
          .describe('A key of a ConfigMap in the same namespace.'),
      })
      .refine((v) => (v.secretKeyRef === undefined) !== (v.configMapKeyRef === undefined), {
        message: 'set exactly one of secretKeyRef and configMapKeyRef',
      })
      .meta({
        'x-kubernetes-validations': [
          {
            rule: 'has(self.secretKeyRef) != has(self.configMapKeyRef)',
            message: 'set exactly one of secretKeyRef and configMapKeyRef',
          },
        ],
      })
      .optional()
      .describe('Take the value from a Secret or ConfigMap key.'),
  })
  .refine((e) => !(e.value !== undefined && e.valueFrom !== undefined), {
    message: 'set value or valueFrom, not both',
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: '!(has(self.value) && has(self.valueFrom))',
        message: 'set value or valueFrom, not both',
      },
    ],
  })
  .describe('An environment variable of the target container.');
