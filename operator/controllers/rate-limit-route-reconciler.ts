// RateLimitRoute reconciler: get -> (gone: done; children go with their owner) -> parse ->
// observe (reads the plan needs) -> pure plan (plan-route.ts) -> none written while any name is
// taken by a foreign object -> apply those that differ (route-children.ts) -> status from what
// was observed.
import type { Logger } from 'pino';
import type { RateLimitRoute } from '../api/index.ts';
import { AUTH_SERVER_NAME } from '../resources/auth/names.ts';
import { usesDefaultRedisSecret } from '../resources/route/redis.ts';
import { routeRedisSecretName } from '../resources/shared/redis-url-secret.ts';
import type { ResourceSettings } from '../resources/shared/settings.ts';
import { namespaceRedisUrlData, type TenantRedisUsers } from '../redis/tenant-redis-users.ts';
import type { Applier } from '../runtime/applier.ts';
import type { Clock } from '../runtime/clock.ts';
import type { ReconcileResult, Reconciler } from '../runtime/controller.ts';
import { KubeApiError } from '../runtime/errors.ts';
import type { EventRecorder } from '../runtime/events.ts';
import type { Informer } from '../runtime/informer.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { splitKey, type KubeObject } from '../runtime/kube-object.ts';
import { resourceTypes } from '../runtime/resource-types.ts';
import { releaseUnusedBucketUser } from './bucket-redis-user.ts';
import { conflictMessage } from './child-ownership.ts';
import {
  EventReasons,
  Reasons,
  readyStatus,
  type EventReason,
  type ReadyState,
} from './conditions.ts';
import {
  parseRoute,
  planRoute,
  routeReadyState,
  routeStatusFields,
  type RouteObserved,
} from './plan-route.ts';
import { applyChildren, foreignChildren } from './route-children.ts';
import { SidecarInjection, TARGET_RECHECK_MS } from './sidecar-injection.ts';
import { readSecretKey } from './source-secret.ts';
import { readUpstreamService, UPSTREAM_POLL_MS } from './upstream-service.ts';

export interface RateLimitRouteCaches {
  routes: Informer;
  deployments: Informer;
  services: Informer;
  configMaps: Informer;
  networkPolicies: Informer;
  podDisruptionBudgets: Informer;
  /** The operator's copies of its default Redis Secret (`<route>-redis`). */
  secrets: Informer;
  /** RateLimitPolicies: their decision services use the namespace's Redis user too (required: without them a route would release it from under a policy). */
  policies: Informer;
}

export interface RateLimitRouteReconcilerDeps {
  applier: Applier;
  caches: RateLimitRouteCaches;
  settings: ResourceSettings;
  clock: Clock;
  events: EventRecorder<EventReason>;
  log: Logger;
  /**
   * Live reads the caches cannot answer: a child's name taken by an object without the operator's
   * label (the caches watch only labelled objects), a spec.redis.secretRef Secret and the operator's
   * default Redis Secret (in its own namespace, which it may not watch).
   */
  client: KubeClient;
  /**
   * The namespaces' own Redis users (operator/redis/): the route's copy of the default Redis
   * Secret names its namespace's user, never the admin credential. Unset: the URL is copied as it is.
   */
  redisUsers?: TenantRedisUsers;
}

export class RateLimitRouteReconciler implements Reconciler {
  readonly name = 'ratelimitroute';
  readonly #d: RateLimitRouteReconcilerDeps;
  readonly #injection: SidecarInjection;

  constructor(deps: RateLimitRouteReconcilerDeps) {
    this.#d = deps;
    this.#injection = new SidecarInjection(deps.client, deps.settings);
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const raw = this.#d.caches.routes.get(namespace, name);
    if (raw === undefined) {
      await releaseUnusedBucketUser(this.#d, namespace);
      return {};
    }
    if (raw.metadata.deletionTimestamp !== undefined) {
      const removedFrom = await this.#injection.finalize(raw);
      if (removedFrom !== undefined)
        this.#d.events.event(
          raw,
          'Normal',
          EventReasons.SidecarRemoved,
          `removed the sidecar from Deployment ${removedFrom}`,
        );
      return {};
    }
    const parsed = parseRoute(raw);
    if (parsed.problem !== undefined) return this.#invalid(raw, parsed.problem);
    const { route } = parsed;
    const observed = await this.#observe(raw, route);
    if ('stop' in observed) return observed.stop;
    const plan = planRoute(route, this.#d.settings, observed);
    if (!plan.ok) return this.#invalid(raw, plan.problem);
    const { teamDeployment } = observed;

    const conflicts = await foreignChildren(this.#d, route, plan.children);
    if (conflicts.length > 0) {
      const message = conflictMessage(conflicts, route.metadata.namespace ?? 'default');
      this.#d.events.event(raw, 'Warning', EventReasons.Conflict, message);
      await this.#writeStatus(
        raw,
        route,
        { status: 'False', reason: Reasons.Conflict, message },
        undefined,
        teamDeployment,
      );
      // A foreign object carries no label the caches watch, so its deletion wakes nothing: look again.
      return { waiting: true };
    }
    let deployment: KubeObject | undefined;
    try {
      deployment = await applyChildren(this.#d, this.#injection, raw, route, plan, teamDeployment);
    } catch (err) {
      if (err instanceof KubeApiError) {
        const message = `could not apply the route's children: ${err.message}; check the operator's RBAC and admission policies`;
        this.#d.events.event(raw, 'Warning', EventReasons.ApplyFailed, message);
        await this.#writeStatus(
          raw,
          route,
          { status: 'False', reason: Reasons.ApplyFailed, message },
          undefined,
          teamDeployment,
        ).catch(() => undefined);
      }
      throw err;
    }
    if (observed.redisUserProblem !== undefined)
      this.#d.log.warn(
        { route: key, err: observed.redisUserProblem },
        'could not make the namespace Redis user',
      );
    for (const w of plan.warnings) this.#d.events.event(raw, 'Warning', w.reason, w.message);

    const { state, readiness } = routeReadyState(route, this.#d.settings, deployment);
    await this.#writeStatus(raw, route, state, readiness, teamDeployment);
    if (observed.redisUserProblem !== undefined) return { waiting: true };
    // The team's Deployment is watched (app.ts): its rollout wakes the route; the recheck is a safety net.
    if (teamDeployment !== undefined && !readiness.ready)
      return { requeueAfterMs: TARGET_RECHECK_MS };
    // Nor does the upstream Service: one that is not there yet, or lacks a selector, is looked at again.
    return observed.upstream?.kind === 'unprotected' ? { requeueAfterMs: UPSTREAM_POLL_MS } : {};
  }

  /** The reads the plan needs, or the result when one of them stops the reconcile (a bad targetRef or upstream). */
  async #observe(
    raw: KubeObject,
    route: RateLimitRoute,
  ): Promise<RouteObserved | { stop: ReconcileResult }> {
    const namespace = route.metadata.namespace ?? 'default';
    const name = route.metadata.name;
    // spec.targetRef: the team's Deployment, read live, takes the place of the route's own.
    let teamDeployment: KubeObject | undefined;
    if (route.spec.targetRef !== undefined) {
      const prepared = await this.#injection.prepare(
        raw,
        route,
        (other) => this.#d.caches.routes.get(namespace, other) !== undefined,
      );
      if (prepared.problem !== undefined) {
        this.#d.events.event(raw, 'Warning', prepared.reason, prepared.problem);
        // No selector: the pods it would count are unknown (or not selectable) until the problem is fixed.
        await this.#writeStatus(
          raw,
          route,
          { status: 'False', reason: prepared.reason, message: prepared.problem },
          undefined,
        );
        // The Deployment's changes (created, released by the other route) wake the route at once.
        return { stop: { requeueAfterMs: TARGET_RECHECK_MS } };
      }
      teamDeployment = prepared.deployment;
    }
    // spec.upstream: the Service it names, read live (its selector, its type).
    const upstream = await readUpstreamService(this.#d.client, route);
    if (upstream?.kind === 'refused') {
      this.#d.events.event(raw, 'Warning', EventReasons.UpstreamInvalid, upstream.message);
      await this.#writeStatus(
        raw,
        route,
        { status: 'False', reason: Reasons.UpstreamInvalid, message: upstream.message },
        undefined,
      );
      return { stop: { waiting: true } };
    }
    // The default Redis, as the namespace's own user, in a Secret beside the route (pods reference
    // Secrets of their namespace only). Redis unreachable: the rest is applied and the namespace's
    // Secret left as it is; retried soon.
    const source = usesDefaultRedisSecret(route, this.#d.settings)
      ? this.#d.settings.defaultRedisSecret
      : undefined;
    const adminUrlData =
      source === undefined ? undefined : await readSecretKey(this.#d.client, source);
    let redisUserProblem: string | undefined;
    const redisUrlData =
      adminUrlData === undefined
        ? undefined
        : await namespaceRedisUrlData(this.#d.redisUsers, adminUrlData, namespace, 'bucket').catch(
            (err: unknown) => {
              redisUserProblem = (err as Error).message;
              return undefined;
            },
          );
    // The route left the default Redis (its copy is still there): its namespace's user may go.
    if (
      source === undefined &&
      this.#d.caches.secrets.get(namespace, routeRedisSecretName(name)) !== undefined
    )
      await releaseUnusedBucketUser(this.#d, namespace);
    // Could not look (e.g. RBAC): null, the plan then says nothing rather than guess.
    const ref = route.spec.redis?.secretRef;
    const redisSecretRef =
      ref === undefined
        ? null
        : await this.#d.client.get(resourceTypes.secret, namespace, ref.name).catch(() => null);
    const authServerRunning =
      this.#d.caches.deployments.get(namespace, AUTH_SERVER_NAME) !== undefined;
    return {
      teamDeployment,
      upstream,
      redisUrlData,
      redisUserProblem,
      redisSecretRef,
      authServerRunning,
    };
  }

  async #invalid(raw: KubeObject, message: string): Promise<ReconcileResult> {
    this.#d.events.event(raw, 'Warning', EventReasons.InvalidSpec, message);
    await this.#writeStatus(
      raw,
      undefined,
      { status: 'False', reason: Reasons.InvalidSpec, message },
      undefined,
    );
    return {};
  }

  /** teamDeployment: spec.targetRef's Deployment as read this reconcile (its pods are the ones counted). */
  async #writeStatus(
    raw: KubeObject,
    route: RateLimitRoute | undefined,
    state: ReadyState,
    pods: { readyReplicas: number; replicas: number } | undefined,
    teamDeployment?: KubeObject,
  ): Promise<void> {
    const fields: Record<string, unknown> = {};
    if (pods !== undefined)
      Object.assign(fields, { readyReplicas: pods.readyReplicas, replicas: pods.replicas });
    if (route !== undefined) Object.assign(fields, routeStatusFields(route, teamDeployment));
    await this.#d.applier.applyStatus(raw, readyStatus(raw, state, this.#d.clock.now(), fields));
  }
}
