// The route reconciler's writes of its children (rate-limit-route-reconciler.ts): the planned
// children that differ, the sidecar into a targetRef Deployment, the stale children out; and,
// before any of them, the names of the plan's children that a foreign object already holds.
import type { RateLimitRoute } from '../api/index.ts';
import { controllerOf } from '../resources/shared/metadata.ts';
import type { KubeObject } from '../runtime/kube-object.ts';
import { resourceTypeOf } from '../runtime/resource-types.ts';
import { foreignObjectProblem } from './child-ownership.ts';
import { EventReasons } from './conditions.ts';
import type { RoutePlan } from './plan-route.ts';
import type { RateLimitRouteReconcilerDeps } from './rate-limit-route-reconciler.ts';
import type { SidecarInjection } from './sidecar-injection.ts';

/** The plan's children (those that differ), the sidecar into the team's Deployment, the stale children out; the Deployment whose pods count. */
export async function applyChildren(
  d: RateLimitRouteReconcilerDeps,
  injection: SidecarInjection,
  raw: KubeObject,
  route: RateLimitRoute,
  plan: RoutePlan,
  teamDeployment: KubeObject | undefined,
): Promise<KubeObject | undefined> {
  const namespace = route.metadata.namespace;
  const changed: string[] = [];
  const deleted: string[] = [];
  let deployment: KubeObject | undefined;
  for (const { object, cache } of plan.children) {
    const outcome = await d.applier.apply(object, d.caches[cache]);
    if (outcome.changed) changed.push(`${object.kind} ${object.metadata.name}`);
    if (object.kind === 'Deployment') deployment = outcome.object;
  }
  if (teamDeployment !== undefined) {
    const injected = await injection.apply(route, plan.configText, teamDeployment);
    if (injected.changed) changed.push(`the sidecar in Deployment ${teamDeployment.metadata.name}`);
    deployment = injected.deployment;
  }
  for (const { name, cache } of plan.stale) {
    const live = d.caches[cache].get(namespace, name);
    // Only a child of this very route (not a namesake someone else made, nor one of a deleted route).
    if (live === undefined || controllerOf(live, 'RateLimitRoute')?.uid !== route.metadata.uid)
      continue;
    if (await d.applier.remove(live)) deleted.push(`${live.kind} ${name}`);
  }
  const key = `${namespace ?? 'default'}/${route.metadata.name}`;
  if (changed.length > 0) {
    d.log.info({ route: key, changed }, 'applied children');
    d.events.event(raw, 'Normal', EventReasons.Applied, `applied ${changed.join(', ')}`);
  }
  if (deleted.length > 0) {
    d.log.info({ route: key, deleted }, 'deleted children');
    d.events.event(raw, 'Normal', EventReasons.Deleted, `deleted ${deleted.join(', ')}`);
  }
  return deployment;
}

/**
 * Children whose name is taken by an object this route does not control. The cache answers for
 * objects with the operator's label; a miss is confirmed with one live GET (a child not yet
 * created, or a foreign object the label-filtered cache cannot see).
 */
export async function foreignChildren(
  d: Pick<RateLimitRouteReconcilerDeps, 'caches' | 'client'>,
  route: RateLimitRoute,
  children: RoutePlan['children'],
): Promise<string[]> {
  // All at once: a new route misses every one of them.
  const lives = await Promise.all(
    children.map(({ object, cache }) => {
      const { namespace, name } = object.metadata;
      return (
        d.caches[cache].get(namespace, name) ??
        d.client.get(resourceTypeOf(object.apiVersion, object.kind), namespace, name)
      );
    }),
  );
  return lives.flatMap((live) => foreignObjectProblem(live, route) ?? []);
}
