// RateLimitRoute -> PodDisruptionBudget `<route>` while it runs more than one pod (see
// shared/pod-disruption-budget.ts for maxUnavailable 1 and why none for one pod).
import type { RateLimitRoute } from '../../api/index.ts';
import type { KubeObject } from '../../runtime/kube-object.ts';
import { controllerRef, routeLabels, routeSelectorLabels } from '../shared/metadata.ts';
import { needsPodDisruptionBudget, podDisruptionBudget } from '../shared/pod-disruption-budget.ts';
import { routeReplicas } from './scale.ts';

/**
 * The route's budget, or undefined when it runs fewer than two pods (any existing one is then
 * deleted). A route that leaves its replica count to an autoscaler gets one: it may run many, and
 * maxUnavailable 1 blocks nothing while it runs one.
 */
export function routePodDisruptionBudget(route: RateLimitRoute): KubeObject | undefined {
  const replicas = routeReplicas(route);
  if (replicas !== undefined && !needsPodDisruptionBudget(replicas)) return undefined;
  const name = route.metadata.name;
  return podDisruptionBudget({
    name,
    namespace: route.metadata.namespace,
    labels: routeLabels(name),
    selectorLabels: routeSelectorLabels(name),
    ownerReferences: [controllerRef(route)],
  });
}
