// The kinds of value an operator setting takes (operator/config.ts): booleans, durations, ports,
// trimmed strings, Redis URLs without a password, Secret keys, and container resources as JSON.
import { z } from 'zod';
import {
  redisUrlCredentialsMessage,
  redisUrlHasCredentials,
  resourceRequirementsSchema,
} from './api/index.ts';
import {
  type ContainerResources,
  quantitiesAsStrings,
  resourcesProblem,
} from './resources/shared/container-resources.ts';
import { parseSecretKeyRef } from './resources/shared/redis-url-secret.ts';

export const boolish = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
export const ms = (def: number) =>
  z.coerce
    .number()
    .int()
    .min(0)
    .max(7 * 24 * 3600_000)
    .default(def);
export const port = (def: number) => z.coerce.number().int().min(0).max(65535).default(def);
export const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));
/** A Redis URL in plain settings: no password (user:pass@), which belongs in a Secret (the *_SECRET setting). */
export const redisUrl = (secretSetting: string) =>
  optionalString
    .refine((v) => v === undefined || /^rediss?:\/\/\S+$/.test(v), 'a redis:// or rediss:// URL')
    .refine(
      (v) => v === undefined || !redisUrlHasCredentials(v),
      redisUrlCredentialsMessage(secretSetting),
    );
/** `name/key` of a Secret in the operator's namespace. */
export const secretKey = optionalString.refine(
  (v) => v === undefined || parseSecretKeyRef(v, 'x') !== undefined,
  "name/key of a Secret in the operator's namespace",
);

/** Container resources as JSON ({"requests": {...}, "limits": {...}}); empty: the default. */
export const resourcesJson = (
  def: ContainerResources,
  check: (r: ContainerResources) => string | undefined = () => undefined,
) =>
  optionalString
    .transform((v, ctx) => {
      if (v === undefined) return def;
      try {
        return JSON.parse(v) as unknown;
      } catch {
        ctx.addIssue({
          code: 'custom',
          message: 'not JSON; give e.g. {"requests":{"cpu":"50m"},"limits":{"memory":"256Mi"}}',
        });
        return z.NEVER;
      }
    })
    .pipe(resourceRequirementsSchema)
    .transform((r) => quantitiesAsStrings(r))
    .refine((r) => resourcesProblem(r) === undefined && check(r) === undefined, {
      error: (i) =>
        resourcesProblem(i.input as ContainerResources) ?? check(i.input as ContainerResources),
    });
