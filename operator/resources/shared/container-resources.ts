// Container resources of the pods the operator renders: the operator's defaults (settings), a
// route's override, and the checks the API server would otherwise only make at pod creation.
import type { ResourceRequirements } from '../../api/index.ts';
import { quantityValue } from '../../runtime/compare.ts';

/** requests and limits with every quantity a string (what the API server returns). */
export interface ContainerResources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

/** The API server returns every quantity as a string; render them so, or each compare would differ. */
export function quantitiesAsStrings(resources: ResourceRequirements): ContainerResources {
  const out: ContainerResources = {};
  for (const group of ['requests', 'limits'] as const) {
    const list = resources[group];
    if (list !== undefined)
      out[group] = Object.fromEntries(Object.entries(list).map(([k, v]) => [k, String(v)]));
  }
  return out;
}

/** A quantity's value (bytes for memory, cores for cpu), or undefined when it cannot be read. */
export function quantityOf(q: string | number): number | undefined {
  return typeof q === 'number' ? q : quantityValue(q);
}

/**
 * Each list the override gives replaces the default's (a route that sets only limits keeps the
 * default requests); an override without either list, or none, leaves the default.
 */
export function overrideResources(
  defaults: ContainerResources,
  override: ResourceRequirements | undefined,
): ContainerResources {
  if (override === undefined) return defaults;
  const given = quantitiesAsStrings(override);
  const out: ContainerResources = {};
  const requests = given.requests ?? defaults.requests;
  const limits = given.limits ?? defaults.limits;
  if (requests !== undefined) out.requests = requests;
  if (limits !== undefined) out.limits = limits;
  return out;
}

/**
 * What the API server would refuse, said before it does: an unreadable quantity, or a request
 * above the limit of the same resource. undefined when the resources are fine.
 */
export function resourcesProblem(resources: ContainerResources): string | undefined {
  for (const group of ['requests', 'limits'] as const) {
    for (const [name, q] of Object.entries(resources[group] ?? {})) {
      if (quantityOf(q) === undefined)
        return `${group}.${name} "${q}" is not a quantity the operator reads (use e.g. 100m, 2, 64Mi, 1Gi)`;
    }
  }
  for (const [name, q] of Object.entries(resources.requests ?? {})) {
    const limit = resources.limits?.[name];
    if (limit === undefined) continue;
    if ((quantityOf(q) ?? 0) > (quantityOf(limit) ?? Infinity))
      return `requests.${name} (${q}) is above limits.${name} (${limit})`;
  }
  return undefined;
}

/** The auth server's default memory limit, MiB (also the base of its V8 caps when no limit is set). */
export const AUTH_SERVER_MEMORY_LIMIT_MIB = 384;

/** The auth server's default resources (Helm value auth.resources). */
export const DEFAULT_AUTH_SERVER_RESOURCES: ContainerResources = {
  requests: { cpu: '50m', memory: '96Mi' },
  limits: { memory: `${AUTH_SERVER_MEMORY_LIMIT_MIB}Mi` },
};
