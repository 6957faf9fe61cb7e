// The scale subresource of a RateLimitRoute (kubectl scale rlr, an HorizontalPodAutoscaler on the
// route): .spec.target.replicas is the wanted count, the status carries the Deployment's pod count
// and the pods' label selector as a string (what an autoscaler lists pods and metrics by).
//
// With spec.targetRef the pods counted are the team Deployment's, so the selector is that
// Deployment's own (its pods carry none of the gateway labels).
//
// Who owns the replica count: a route that sets spec.target.replicas (by hand, kubectl scale rlr
// or an autoscaler on the route) has the operator write it into the Deployment; a route that
// omits it leaves Deployment.spec.replicas alone: server-side apply then does not own the field,
// so an autoscaler of the Deployment (or kubectl scale deployment) sets it and reconciles keep it.
import type { RateLimitRoute } from '../../api/index.ts';
import { asRecord, type KubeObject } from '../../runtime/kube-object.ts';

/** Labels as a selector string, sorted by key: `a=1,b=2`. */
export function selectorString(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k] ?? ''}`)
    .join(',');
}

/** A matchExpressions operator as a selector string writes it, given the key and the sorted value set `(a,b)`. */
const EXPRESSION_FORMATS = new Map<string, (key: string, set: string) => string>([
  ['In', (key, set) => `${key} in ${set}`],
  ['NotIn', (key, set) => `${key} notin ${set}`],
  ['Exists', (key) => key],
  ['DoesNotExist', (key) => `!${key}`],
]);

/**
 * A Deployment's spec.selector (a LabelSelector) as the selector string the API server would
 * print for it, requirements sorted by key: `app=web,tier in (a,b),!canary`. Undefined when it is
 * not a LabelSelector with at least one requirement (an empty selector would select every pod).
 */
export function labelSelectorString(selector: unknown): string | undefined {
  const record = asRecord(selector);
  const requirements: Array<[string, string]> = [];
  for (const [key, value] of Object.entries(asRecord(record?.['matchLabels']) ?? {})) {
    if (typeof value !== 'string') return undefined;
    requirements.push([key, `${key}=${value}`]);
  }
  const expressions = record?.['matchExpressions'] ?? [];
  if (!Array.isArray(expressions)) return undefined;
  for (const e of expressions) {
    const { key, operator, values = [] } = asRecord(e) ?? {};
    if (
      typeof key !== 'string' ||
      !Array.isArray(values) ||
      !values.every((v) => typeof v === 'string')
    )
      return undefined;
    const format = EXPRESSION_FORMATS.get(String(operator));
    if (format === undefined) return undefined;
    requirements.push([key, format(key, `(${[...values].sort().join(',')})`)]);
  }
  if (requirements.length === 0) return undefined;
  return requirements
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, text]) => text)
    .join(',');
}

/** The replica count the route asks for; undefined: left to whoever scales the Deployment. */
export function routeReplicas(route: RateLimitRoute): number | undefined {
  return route.spec.target?.replicas ?? route.spec.upstream?.replicas;
}

/** The Deployment's replicas field, when set (the count an autoscaler or kubectl scale chose). */
export function deploymentReplicas(deployment: KubeObject | undefined): number | undefined {
  const replicas = asRecord(deployment?.['spec'])?.['replicas'];
  return typeof replicas === 'number' && Number.isInteger(replicas) ? replicas : undefined;
}
