// The scale subresource of a RateLimitRoute (kubectl scale rlr, an HorizontalPodAutoscaler on the
// route): .spec.target.replicas is the wanted count, the status carries the Deployment's pod count
// and the pods' label selector as a string (what an autoscaler lists pods and metrics by).
//
// Who owns the replica count: a route that sets spec.target.replicas (by hand, kubectl scale rlr
// or an autoscaler on the route) has the operator write it into the Deployment; a route that
// omits it leaves Deployment.spec.replicas alone: server-side apply then does not own the field,
// so an autoscaler of the Deployment (or kubectl scale deployment) sets it and reconciles keep it.
import type { RateLimitRoute } from '../api/index.ts';
import { asRecord, type KubeObject } from '../runtime/kube-object.ts';

/** Labels as a selector string, sorted by key: `a=1,b=2`. */
export function selectorString(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k] ?? ''}`)
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
