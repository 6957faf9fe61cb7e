// Pieces shared by both kinds: group/version, metadata, status conditions, bounded strings.
// Every string and list carries a bound (the API server's CEL cost budget needs them, and a
// typo'd megabyte string should fail at admission, not in a sidecar).
import { z } from 'zod';

export const GROUP = 'portcullis.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** A DNS-1123 subdomain (object names), e.g. a Secret name. */
export const dnsSubdomain = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);

/** One key of a Secret or ConfigMap. */
export const dataKey = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[-._a-zA-Z0-9]+$/);

/** A reference to one key of a Secret in the same namespace. */
export const secretKeyRefSchema = z
  .strictObject({
    name: dnsSubdomain.describe('Name of a Secret in the same namespace.'),
    key: dataKey.describe('Key inside the Secret.'),
  })
  .describe('A key of a Secret in the same namespace.');
export type SecretKeyRef = z.infer<typeof secretKeyRefSchema>;

/** Condition types and reasons are constants so that controllers and tests agree on them. */
export const CONDITION_READY = 'Ready';

/** metav1.Condition, as the API conventions describe it. */
export const conditionSchema = z
  .strictObject({
    type: z
      .string()
      .min(1)
      .max(316)
      .regex(
        /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/,
      )
      .describe('Type of condition in CamelCase, e.g. Ready.'),
    status: z
      .enum(['True', 'False', 'Unknown'])
      .describe('Status of the condition: True, False or Unknown.'),
    observedGeneration: z
      .int()
      .min(0)
      .max(Number.MAX_SAFE_INTEGER)
      .optional()
      .describe('The .metadata.generation the condition was set from.'),
    lastTransitionTime: z.iso
      .datetime({ offset: true })
      .describe('When the condition last changed status (RFC 3339).'),
    reason: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/)
      .describe('Machine-readable reason for the last transition, in CamelCase.'),
    message: z
      .string()
      .max(32768)
      .describe('Human-readable message: what happened and what to do about it.'),
  })
  .describe('An observation of the state of the resource.');
export type Condition = z.infer<typeof conditionSchema>;

export const conditionsSchema = z
  .array(conditionSchema)
  .max(16)
  .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
  .describe('Latest observations of the resource (Ready, with a reason and a message).');

export const observedGenerationSchema = z
  .int()
  .min(0)
  .max(Number.MAX_SAFE_INTEGER)
  .describe('The .metadata.generation of the spec the status describes.');

/** The parts of ObjectMeta the operator reads; other fields pass through. */
export const objectMetaSchema = z.looseObject({
  name: z.string().min(1).max(253),
  namespace: z.string().max(63).optional(),
  uid: z.string().max(128).optional(),
  generation: z.int().min(0).optional(),
  resourceVersion: z.string().max(128).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  deletionTimestamp: z.string().optional(),
  finalizers: z.array(z.string()).optional(),
});
export type ObjectMeta = z.infer<typeof objectMetaSchema>;

/**
 * How the CRD is named and shown, next to the schema it is generated from (scripts/gen-crds.ts).
 * `spec` and `status` are the zod schemas; the rest becomes the CRD's names and printer columns.
 */
export interface CrdSource {
  readonly kind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly description: string;
  readonly spec: z.ZodType;
  readonly status: z.ZodType;
  /** The scale subresource (kubectl scale, HorizontalPodAutoscaler): JSON paths of the replica fields and the pods' selector string. */
  readonly scale?: {
    readonly specReplicasPath: string;
    readonly statusReplicasPath: string;
    readonly labelSelectorPath: string;
  };
  /** CEL rules on the whole object (e.g. on metadata.name), as `x-kubernetes-validations`. */
  readonly rootValidations?: readonly { readonly rule: string; readonly message: string }[];
  readonly printerColumns: readonly {
    readonly name: string;
    readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
    readonly jsonPath: string;
    readonly description: string;
    readonly priority?: number;
  }[];
}
