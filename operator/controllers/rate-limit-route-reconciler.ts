// RateLimitRoute reconciler: get -> (gone: done; children go with their owner) -> validate ->
// pure desired children -> none written while any name is taken by a foreign object -> apply
// those that differ -> status from what was observed.
import type { Logger } from 'pino';
import { rateLimitRouteSchema, RESERVED_ROUTE_NAME_RULE, RESERVED_ROUTE_NAMES, type RateLimitRoute } from '../api/index.ts';
import { routeConfigMap } from '../resources/route/config-map.ts';
import { AUTH_SERVER_NAME } from '../resources/auth/names.ts';
import { controllerOf, routeSelectorLabels } from '../resources/shared/metadata.ts';
import { routeDeployment } from '../resources/route/deployment.ts';
import { routeNetworkPolicy, routeWantsNetworkPolicy, upstreamNetworkPolicy } from '../resources/route/network-policy.ts';
import { routePodDisruptionBudget } from '../resources/route/pod-disruption-budget.ts';
import { routeUpstreamNetworkPolicyName, SIDECAR_CONFIG_KEY, serviceNameProblem } from '../resources/route/names.ts';
import { deploymentReplicas, labelSelectorString, routeReplicas, selectorString } from '../resources/route/scale.ts';
import { injectionService } from '../resources/route/injection.ts';
import { routeService } from '../resources/route/service.ts';
import { routeRedisSecret, routeRedisSecretName } from '../resources/shared/redis-url-secret.ts';
import { readSecretKey } from './source-secret.ts';
import { usesDefaultRedisSecret } from '../resources/route/redis.ts';
import { namespaceRedisUrlData, releaseNamespaceRedisUser, type TenantRedisUsers } from '../redis/tenant-redis-users.ts';
import type { ResourceSettings } from '../resources/shared/settings.ts';
import type { Applier } from '../runtime/applier.ts';
import type { Clock } from '../runtime/clock.ts';
import type { ReconcileResult, Reconciler } from '../runtime/controller.ts';
import { InvalidSpecError, KubeApiError } from '../runtime/errors.ts';
import type { EventRecorder } from '../runtime/events.ts';
import type { Informer } from '../runtime/informer.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { asRecord, splitKey, type KubeObject } from '../runtime/kube-object.ts';
import { resourceTypes, resourceTypeOf } from '../runtime/resource-types.ts';
import { conflictMessage, foreignObjectProblem } from './child-ownership.ts';
import { EventReasons, Reasons, readyStatus, type EventReason, type ReadyState } from './conditions.ts';
import { SidecarInjection } from './sidecar-injection.ts';
import { deploymentReadiness } from './deployment-readiness.ts';
import { describeIssues } from './spec-issues.ts';
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
      await this.#releaseRedisUser(namespace);
      return {};
    }
    if (raw.metadata.deletionTimestamp !== undefined) {
      const removedFrom = await this.#injection.finalize(raw);
      if (removedFrom !== undefined) this.#d.events.event(raw, 'Normal', EventReasons.SidecarRemoved, `removed the sidecar from Deployment ${removedFrom}`);
      return {};
    }

    const parsed = rateLimitRouteSchema.safeParse(raw);
    if (!parsed.success) {
      await this.#invalid(raw, `spec is invalid: ${describeIssues(parsed.error)}; fix the RateLimitRoute`);
      return {};
    }
    const route = parsed.data;
    // The API server refuses these names; a route made before that rule is refused here.
    const nameProblem = serviceNameProblem(name) ?? ((RESERVED_ROUTE_NAMES as readonly string[]).includes(name) ? RESERVED_ROUTE_NAME_RULE : undefined);
    if (nameProblem !== undefined) {
      await this.#invalid(raw, nameProblem);
      return {};
    }

    // spec.targetRef: the team's Deployment, read live, takes the place of the route's own.
    let teamDeployment: KubeObject | undefined;
    if (route.spec.targetRef !== undefined) {
      const prepared = await this.#injection.prepare(raw, route, (other) => this.#d.caches.routes.get(namespace, other) !== undefined);
      if (prepared.problem !== undefined) {
        this.#d.events.event(raw, 'Warning', prepared.reason, prepared.problem);
        // No selector: the pods it would count are unknown (or not selectable) until the problem is fixed.
        await this.#writeStatus(raw, route, { status: 'False', reason: prepared.reason, message: prepared.problem }, undefined);
        return { waiting: true };
      }
      teamDeployment = prepared.deployment;
    }

    // spec.upstream: the Service it names, read live (its selector, its type).
    const upstream = await readUpstreamService(this.#d.client, route);
    if (upstream?.kind === 'refused') {
      this.#d.events.event(raw, 'Warning', EventReasons.UpstreamInvalid, upstream.message);
      await this.#writeStatus(raw, route, { status: 'False', reason: Reasons.UpstreamInvalid, message: upstream.message }, undefined);
      return { waiting: true };
    }

    // The default Redis, as the namespace's own user, in a Secret beside the route (pods reference
    // Secrets of their namespace only).
    const source = usesDefaultRedisSecret(route, this.#d.settings) ? this.#d.settings.defaultRedisSecret : undefined;
    const adminUrlData = source === undefined ? undefined : await readSecretKey(this.#d.client, source);
    // Redis unreachable: the rest is applied and the namespace's Secret left as it is; retried soon.
    let redisUserProblem: string | undefined;
    const redisUrlData =
      adminUrlData === undefined
        ? undefined
        : await namespaceRedisUrlData(this.#d.redisUsers, adminUrlData, route.metadata.namespace ?? 'default', 'bucket').catch((err: unknown) => {
            redisUserProblem = (err as Error).message;
            return undefined;
          });
    // The route left the default Redis (its copy is still there): its namespace's user may go.
    if (source === undefined && this.#d.caches.secrets.get(namespace, routeRedisSecretName(name)) !== undefined) await this.#releaseRedisUser(namespace);

    let children: Array<[KubeObject, Informer]>;
    let configText = '';
    // Children the route may have had and no longer wants (the policy switched off, one replica left).
    const stale: Array<[string, Informer]> = [];
    try {
      const configMap = routeConfigMap(route, this.#d.settings);
      configText = (configMap['data'] as Record<string, string>)[SIDECAR_CONFIG_KEY] ?? '';
      children =
        teamDeployment === undefined
          ? [
              [configMap, this.#d.caches.configMaps], // first: new pods must find the new config
              [routeDeployment(route, this.#d.settings, configText), this.#d.caches.deployments],
              [routeService(route, this.#d.settings), this.#d.caches.services],
            ]
          : [
              [configMap, this.#d.caches.configMaps],
              [injectionService(route, this.#d.settings, teamDeployment), this.#d.caches.services],
            ];
      const { networkPolicies, podDisruptionBudgets, secrets } = this.#d.caches;
      // First of all: new pods must find it.
      if (redisUrlData !== undefined) children.unshift([routeRedisSecret(route, redisUrlData), secrets]);
      else if (source === undefined) stale.push([routeRedisSecretName(name), secrets]);
      // Around the limiter: the sidecar's pods (the route's or the team's) open only the sidecar
      // ports, the upstream's pods only to the gateway. An upstream Service gone or without a
      // selector keeps the policy it had: its pods may still be there.
      const policies = routeWantsNetworkPolicy(route, this.#d.settings);
      if (policies) children.push([routeNetworkPolicy(route, this.#d.settings), networkPolicies]);
      else stale.push([name, networkPolicies]);
      if (policies && upstream?.kind === 'selector') children.push([upstreamNetworkPolicy(route, upstream.selector), networkPolicies]);
      else if (!policies || upstream === undefined) stale.push([routeUpstreamNetworkPolicyName(name), networkPolicies]);
      // The team's pods are theirs to keep available: no budget over pods the route does not run.
      const budget = teamDeployment === undefined ? routePodDisruptionBudget(route) : undefined;
      if (budget !== undefined) children.push([budget, podDisruptionBudgets]);
      else stale.push([name, podDisruptionBudgets]);
    } catch (err) {
      if (err instanceof InvalidSpecError) {
        await this.#invalid(raw, err.message);
        return {};
      }
      throw err;
    }

    const conflicts = await this.#foreignChildren(route, children);
    if (conflicts.length > 0) {
      const message = conflictMessage(conflicts, route.metadata.namespace ?? 'default');
      this.#d.events.event(raw, 'Warning', EventReasons.Conflict, message);
      await this.#writeStatus(raw, route, { status: 'False', reason: Reasons.Conflict, message }, undefined, teamDeployment);
      // A foreign object carries no label the caches watch, so its deletion wakes nothing: look again.
      return { waiting: true };
    }

    const changed: string[] = [];
    const deleted: string[] = [];
    let deployment: KubeObject | undefined;
    try {
      for (const [desired, cache] of children) {
        const outcome = await this.#d.applier.apply(desired, cache);
        if (outcome.changed) changed.push(`${desired.kind} ${desired.metadata.name}`);
        if (desired.kind === 'Deployment') deployment = outcome.object;
      }
      if (teamDeployment !== undefined) {
        const injected = await this.#injection.apply(route, configText, teamDeployment);
        if (injected.changed) changed.push(`the sidecar in Deployment ${teamDeployment.metadata.name}`);
        deployment = injected.deployment;
      }
      for (const [childName, cache] of stale) {
        const live = cache.get(namespace, childName);
        // Only a child of this very route (not a namesake someone else made, nor one of a deleted route).
        if (live === undefined || controllerOf(live, 'RateLimitRoute')?.uid !== route.metadata.uid) continue;
        if (await this.#d.applier.remove(live)) deleted.push(`${live.kind} ${childName}`);
      }
    } catch (err) {
      if (err instanceof KubeApiError) {
        const message = `could not apply the route's children: ${err.message}; check the operator's RBAC and admission policies`;
        this.#d.events.event(raw, 'Warning', EventReasons.ApplyFailed, message);
        await this.#writeStatus(raw, route, { status: 'False', reason: Reasons.ApplyFailed, message }, undefined, teamDeployment).catch(() => undefined);
      }
      throw err;
    }
    if (changed.length > 0) {
      this.#d.log.info({ route: key, changed }, 'applied children');
      this.#d.events.event(raw, 'Normal', EventReasons.Applied, `applied ${changed.join(', ')}`);
    }
    if (deleted.length > 0) {
      this.#d.log.info({ route: key, deleted }, 'deleted children');
      this.#d.events.event(raw, 'Normal', EventReasons.Deleted, `deleted ${deleted.join(', ')}`);
    }

    if (upstream?.kind === 'unprotected' && routeWantsNetworkPolicy(route, this.#d.settings)) this.#d.events.event(raw, 'Warning', EventReasons.UpstreamUnprotected, upstream.message);
    await this.#checkRedisSecret(raw, route);
    this.#checkJwtIssuer(raw, route);
    if (redisUserProblem !== undefined) {
      this.#d.log.warn({ route: key, err: redisUserProblem }, 'could not make the namespace Redis user');
      this.#d.events.event(raw, 'Warning', EventReasons.RedisUserFailed, `could not make the namespace's Redis user with the operator's default Redis (${redisUserProblem}); retrying`);
    } else if (source !== undefined && redisUrlData === undefined) {
      this.#d.events.event(raw, 'Warning', EventReasons.RedisSecretMissing, `the operator's default Redis Secret ${source.namespace}/${source.name} (key ${source.key}) is missing or empty; the route's pods cannot start until it exists (the chart's redis.existingSecret)`);
    }
    // Replicas left to an autoscaler: ready means as many pods as the Deployment asks for now.
    const readiness = deploymentReadiness(deployment, routeReplicas(route) ?? deploymentReplicas(deployment) ?? 1);
    const state: ReadyState = readiness.ready
      ? { status: 'True', reason: Reasons.Ready, message: `${readiness.message}; Service ${name} forwards port ${this.#d.settings.servicePort} to the sidecars` }
      : { status: 'False', reason: Reasons.Progressing, message: readiness.message };
    await this.#writeStatus(raw, route, state, readiness, teamDeployment);
    if (redisUserProblem !== undefined) return { waiting: true };
    // The team's Deployment wakes no informer: its rollout is polled, less often as it drags on.
    if (teamDeployment !== undefined && !readiness.ready) return { waiting: true };
    // Nor does the upstream Service: one that is not there yet, or lacks a selector, is looked at again.
    return upstream?.kind === 'unprotected' ? { requeueAfterMs: UPSTREAM_POLL_MS } : {};
  }

  /**
   * Children whose name is taken by an object this route does not control. The cache answers for
   * objects with the operator's label; a miss is confirmed with one live GET (a child not yet
   * created, or a foreign object the label-filtered cache cannot see).
   */
  async #foreignChildren(route: RateLimitRoute, children: ReadonlyArray<[KubeObject, Informer]>): Promise<string[]> {
    // All at once: a new route misses every one of them.
    const lives = await Promise.all(
      children.map(([desired, cache]) => {
        const { namespace, name } = desired.metadata;
        return cache.get(namespace, name) ?? this.#d.client.get(resourceTypeOf(desired.apiVersion, desired.kind), namespace, name);
      }),
    );
    return lives.flatMap((live) => foreignObjectProblem(live, route) ?? []);
  }

  /**
   * A missing Secret (or key) is the kubelet's to report (the pod stays in ContainerCreating), so
   * it does not make the spec invalid; a Warning Event says it where the route's owner looks.
   */
  async #checkRedisSecret(raw: KubeObject, route: RateLimitRoute): Promise<void> {
    const ref = route.spec.redis?.secretRef;
    if (ref === undefined) return;
    const secret = await this.#d.client.get(resourceTypes.secret, route.metadata.namespace, ref.name).catch(() => null);
    if (secret === null) return; // could not look (e.g. RBAC): say nothing rather than guess
    const data = asRecord(secret?.['data']);
    if (data !== undefined && ref.key in data) return;
    const what = secret === undefined ? `Secret ${ref.name} does not exist` : `Secret ${ref.name} has no key ${ref.key}`;
    this.#d.events.event(raw, 'Warning', EventReasons.RedisSecretMissing, `spec.redis.secretRef: ${what}; the route's pods cannot start until it does (kubectl -n ${route.metadata.namespace} create secret generic ${ref.name} --from-literal=${ref.key}=redis://...)`);
  }

  /**
   * A jwt key without an issuer of its own trusts the namespace's auth server, which the operator
   * runs only while an OAuthClient exists there: without it every request of the route is a 503
   * (the sidecar cannot fetch the keys), so say so where the team looks.
   */
  #checkJwtIssuer(raw: KubeObject, route: RateLimitRoute): void {
    const { key } = route.spec.limiter;
    if (key.source !== 'jwt' || key.issuer !== undefined) return;
    const namespace = route.metadata.namespace ?? 'default';
    if (this.#d.caches.deployments.get(namespace, AUTH_SERVER_NAME) !== undefined) return;
    this.#d.events.event(
      raw,
      'Warning',
      EventReasons.AuthServerMissing,
      `spec.limiter.key is jwt without an issuer, so it trusts the Portcullis auth server of namespace ${namespace}, which runs only while an OAuthClient exists there: until one does (or spec.limiter.key.issuer names another issuer) the sidecars cannot fetch signing keys and answer 503`,
    );
  }

  /**
   * No route of the namespace left on the default Redis: its user there goes. Every route without
   * spec.redis counts, an invalid one too (its pods still run on the user), and the count is taken
   * after the last await, so a route another worker set the user up for meanwhile keeps it (the
   * DELUSER queues behind that SETUSER on the one admin connection).
   */
  async #releaseRedisUser(namespace: string | undefined): Promise<void> {
    const source = this.#d.settings.defaultRedisSecret;
    if (this.#d.redisUsers === undefined || source === undefined || namespace === undefined) return;
    const adminUrlData = await readSecretKey(this.#d.client, source);
    if (adminUrlData === undefined) return;
    const onDefault = this.#d.caches.routes.list(namespace).some((r) => r.metadata.deletionTimestamp === undefined && asRecord(r['spec'])?.['redis'] === undefined);
    if (!onDefault) await releaseNamespaceRedisUser(this.#d.redisUsers, adminUrlData, namespace, 'bucket');
  }

  async #invalid(raw: KubeObject, message: string): Promise<void> {
    this.#d.events.event(raw, 'Warning', EventReasons.InvalidSpec, message);
    await this.#writeStatus(raw, undefined, { status: 'False', reason: Reasons.InvalidSpec, message }, undefined);
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
    if (pods !== undefined) Object.assign(fields, { readyReplicas: pods.readyReplicas, replicas: pods.replicas });
    if (route !== undefined) {
      fields['service'] = route.metadata.name; // the Service is named as the route
      const selector = statusSelector(route, teamDeployment);
      if (selector !== undefined) fields['selector'] = selector;
    }
    await this.#d.applier.applyStatus(raw, readyStatus(raw, state, this.#d.clock.now(), fields));
  }
}

/**
 * status.selector, what /scale reports and an autoscaler lists pods by: the selector of the pods
 * status.replicas counts. Those are the route's own pods (the gateway labels), or with
 * spec.targetRef the team Deployment's, which carry none of the gateway labels: its own selector.
 */
function statusSelector(route: RateLimitRoute, teamDeployment: KubeObject | undefined): string | undefined {
  if (route.spec.targetRef === undefined) return selectorString(routeSelectorLabels(route.metadata.name));
  return labelSelectorString(asRecord(teamDeployment?.['spec'])?.['selector']);
}
