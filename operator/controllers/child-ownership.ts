// The operator never adopts an object it did not create. Server-side apply with force=true would
// take over any live object of the same name (a team's own Service called like the route, a
// Deployment from a chart), so before a child is written its live copy must be controlled by this
// very route (kind and uid: a route deleted and recreated under the same name is another owner
// until the garbage collector has removed the old one's children).
import { controllerOf, type Owner } from '../resources/shared/metadata.ts';
import type { KubeObject } from '../runtime/kube-object.ts';

/** Why the live object is not this owner's to write, or undefined when it is (or does not exist). */
export function foreignObjectProblem(
  live: KubeObject | undefined,
  owner: Owner,
): string | undefined {
  if (live === undefined) return undefined;
  const ref = live.metadata.ownerReferences?.find((r) => r.controller === true);
  const what = `${live.kind} ${live.metadata.name}`;
  if (ref === undefined) return `${what} exists and has no controller ownerReference`;
  const mine = controllerOf(live, owner.kind);
  if (mine !== undefined && mine.uid === owner.metadata.uid) return undefined;
  if (mine !== undefined && mine.name === owner.metadata.name)
    return `${what} belongs to an earlier ${owner.kind} of this name (uid ${mine.uid}), not yet garbage-collected`;
  return `${what} is controlled by ${ref.kind} ${ref.name}`;
}

/** The Ready message for a route whose children collide with objects it does not own. */
export function conflictMessage(problems: readonly string[], namespace: string): string {
  return (
    `${problems.join('; ')}. The operator does not adopt objects it did not create, so it wrote none of the route's children and left these untouched. ` +
    `Delete or rename them (kubectl -n ${namespace} delete <kind> <name>) or give the RateLimitRoute another name; the route looks again after 5 s, then less often (at most every 2 min)`
  );
}
