// spec.targetRef: the sidecar goes into a Deployment the team already runs (resources/route/injection.ts says
// which fields). The route carries a finalizer while the sidecar may be there, so that deleting the
// route first removes exactly what was added. The team's Deployment carries no operator label: a
// metadata-only informer (app.ts) wakes the routes that target it on each of its changes, and each
// reconcile reads it live.
import type { RateLimitRoute } from '../api/index.ts';
import {
  INJECTION_FINALIZER,
  injectedBy,
  injectedSidecar,
  injectionProblem,
  releasedSidecar,
  SIDECAR_FIELD_MANAGER,
} from '../resources/route/injection.ts';
import type { ResourceSettings } from '../resources/shared/settings.ts';
import { isSubset } from '../runtime/compare.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { asRecord, type KubeObject } from '../runtime/kube-object.ts';
import { resourceTypes } from '../runtime/resource-types.ts';
import { Reasons } from './conditions.ts';
import { holdFinalizer, releaseFinalizer } from '../runtime/finalizers.ts';

/**
 * A route waiting on its team's Deployment (missing, rolling out, held by another route) looks
 * again after this long, ms, even without an event: a safety net for a missed watch event.
 */
export const TARGET_RECHECK_MS = 5 * 60_000;

export type Prepared =
  | { deployment: KubeObject; problem?: undefined }
  | {
      deployment?: undefined;
      problem: string;
      reason: typeof Reasons.TargetRefInvalid | typeof Reasons.TargetRefInUse;
    };

export class SidecarInjection {
  readonly #client: KubeClient;
  readonly #settings: ResourceSettings;

  constructor(client: KubeClient, settings: ResourceSettings) {
    this.#client = client;
    this.#settings = settings;
  }

  /**
   * The finalizer first (nothing is added that a deletion could miss), then the team's Deployment
   * as it is now. routeExists: whether a route of that name exists in the route's namespace (a
   * sidecar label left by a route that is gone holds nothing).
   */
  async prepare(
    raw: KubeObject,
    route: RateLimitRoute,
    routeExists: (name: string) => boolean,
  ): Promise<Prepared> {
    const ref = route.spec.targetRef;
    if (ref === undefined) throw new Error('prepare needs spec.targetRef');
    await holdFinalizer(this.#client, raw, INJECTION_FINALIZER, SIDECAR_FIELD_MANAGER);
    const invalid = (problem: string): Prepared => ({ problem, reason: Reasons.TargetRefInvalid });
    const live = await this.#client.get(
      resourceTypes.deployment,
      route.metadata.namespace,
      ref.name,
    );
    if (live === undefined)
      return invalid(
        `Deployment ${ref.name} (spec.targetRef) does not exist in namespace ${route.metadata.namespace ?? 'default'}; create it or fix the name`,
      );
    const holder = injectedBy(live);
    if (holder !== undefined && holder !== route.metadata.name && routeExists(holder)) {
      return {
        problem: `Deployment ${ref.name} already runs the sidecar of RateLimitRoute ${holder}; one Deployment takes one route's sidecar: delete one of the two routes`,
        reason: Reasons.TargetRefInUse,
      };
    }
    // Another controller (a ReplicaSet's owner, a route's own Deployment, another operator) would rewrite it.
    const controller = live.metadata.ownerReferences?.find((r) => r.controller === true);
    if (controller !== undefined)
      return invalid(
        `Deployment ${ref.name} is controlled by ${controller.kind} ${controller.name}, which would undo the sidecar; target a Deployment nothing else controls`,
      );
    const problem = injectionProblem(route, this.#settings, live);
    return problem === undefined ? { deployment: live } : invalid(problem);
  }

  /** Adds (or updates) the sidecar unless the live Deployment already has it as desired. */
  async apply(
    route: RateLimitRoute,
    sidecarConfigText: string,
    live: KubeObject,
  ): Promise<{ deployment: KubeObject; changed: boolean }> {
    const desired = injectedSidecar(route, this.#settings, sidecarConfigText);
    if (isSubset(desired, live)) return { deployment: live, changed: false };
    return {
      deployment: await this.#client.apply(desired, undefined, SIDECAR_FIELD_MANAGER),
      changed: true,
    };
  }

  /** A deleted route: removes what was added (if the Deployment still exists), then its finalizer. */
  async finalize(raw: KubeObject): Promise<string | undefined> {
    if (!(raw.metadata.finalizers ?? []).includes(INJECTION_FINALIZER)) return undefined;
    const name = asRecord(asRecord(raw['spec'])?.['targetRef'])?.['name'];
    let removedFrom: string | undefined;
    // A namespace being deleted takes the Deployment with it; the operator's rights there may be
    // gone already (its RoleBinding deleted first), so only the finalizer is let go.
    if (await this.#namespaceTerminating(raw.metadata.namespace)) {
      await releaseFinalizer(this.#client, raw, INJECTION_FINALIZER, SIDECAR_FIELD_MANAGER);
      return undefined;
    }
    const live =
      typeof name === 'string'
        ? await this.#client.get(resourceTypes.deployment, raw.metadata.namespace, name)
        : undefined;
    // Released only when the sidecar there is this route's: the manager is shared by every route,
    // so releasing a Deployment another route injected would take that route's sidecar out.
    const holder = live === undefined ? undefined : injectedBy(live);
    if (
      live !== undefined &&
      typeof name === 'string' &&
      (holder === undefined || holder === raw.metadata.name)
    ) {
      await this.#client.apply(releasedSidecar(raw, name), undefined, SIDECAR_FIELD_MANAGER);
      removedFrom = name;
    }
    await releaseFinalizer(this.#client, raw, INJECTION_FINALIZER, SIDECAR_FIELD_MANAGER);
    return removedFrom;
  }

  async #namespaceTerminating(namespace: string | undefined): Promise<boolean> {
    if (namespace === undefined) return false;
    // No answer (a chart without the namespaces rule): release as before.
    const ns = await this.#client
      .get(resourceTypes.namespace, undefined, namespace)
      .catch(() => undefined);
    return ns?.metadata.deletionTimestamp !== undefined;
  }
}
