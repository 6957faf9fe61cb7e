// RateLimitPolicy reconciler: get -> (being deleted: take the filters out of the routes, then the
// finalizer) -> observe the namespace (HTTPRoutes and Gateways read live: their CRDs may not be
// installed, so no informer waits on them) -> pure plan (operator/policies/plan-policy.ts) ->
// none written while a child's name is taken by a foreign object -> apply -> status.ancestors.
import type { Logger } from 'pino';
import { rateLimitPolicySchema, type RateLimitPolicy } from '../api/index.ts';
import type { ResourceSettings } from '../resources/shared/settings.ts';
import { namespaceRedisUrlData, type TenantRedisUsers } from '../redis/tenant-redis-users.ts';
import { decisionName, decisionRoute } from '../policies/decision-resources.ts';
import {
  planFilters,
  planPolicy,
  policyBackend,
  type PolicyObserved,
} from '../policies/plan-policy.ts';
import { everyTarget } from '../policies/policy-targets.ts';
import {
  ancestorStatuses,
  PolicyReasons,
  previousAncestors,
  type PlannedAncestor,
} from '../policies/policy-status.ts';
import { usesDefaultRedisSecret } from '../resources/route/redis.ts';
import { routeRedisSecretName } from '../resources/shared/redis-url-secret.ts';
import type { Applier } from '../runtime/applier.ts';
import type { Clock } from '../runtime/clock.ts';
import type { ReconcileResult, Reconciler } from '../runtime/controller.ts';
import { InvalidSpecError } from '../runtime/errors.ts';
import type { EventRecorder } from '../runtime/events.ts';
import type { Informer } from '../runtime/informer.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { splitKey, type KubeObject } from '../runtime/kube-object.ts';
import { resourceTypes, resourceTypeOf } from '../runtime/resource-types.ts';
import { controllerOf } from '../resources/shared/metadata.ts';
import { releaseUnusedBucketUser } from './bucket-redis-user.ts';
import { foreignObjectProblem } from './child-ownership.ts';
import { EventReasons, type EventReason } from './conditions.ts';
import { ExternalAuthCheck, listIfInstalled } from './gateway-api-reads.ts';
import { readSecretKey } from './source-secret.ts';
import { describeIssues } from './spec-issues.ts';
import { holdFinalizer, releaseFinalizer } from '../runtime/finalizers.ts';

/** Held while the policy's filter may be on a route: deleting the policy takes it out first. */
export const POLICY_FINALIZER = 'portcullis.dev/external-auth';
/** The manager of the policy's finalizer entry (nothing else of the policy). */
export const POLICY_FIELD_MANAGER = 'portcullis-operator-policy';
/** Routes and Gateways wake no informer: look again this often (ms) so an edit of them is caught. */
export const POLICY_POLL_MS = 60_000;

export interface RateLimitPolicyCaches {
  policies: Informer;
  /** Routes: whether any still uses the namespace's Redis user. */
  routes: Informer;
  deployments: Informer;
  services: Informer;
  configMaps: Informer;
  secrets: Informer;
  networkPolicies: Informer;
  podDisruptionBudgets: Informer;
}

export interface RateLimitPolicyReconcilerDeps {
  applier: Applier;
  caches: RateLimitPolicyCaches;
  settings: ResourceSettings;
  clock: Clock;
  events: EventRecorder<EventReason>;
  log: Logger;
  client: KubeClient;
  redisUsers?: TenantRedisUsers | undefined;
}

export class RateLimitPolicyReconciler implements Reconciler {
  readonly name = 'ratelimitpolicy';
  readonly #d: RateLimitPolicyReconcilerDeps;
  readonly #externalAuth: ExternalAuthCheck;

  constructor(deps: RateLimitPolicyReconcilerDeps) {
    this.#d = deps;
    this.#externalAuth = new ExternalAuthCheck(deps.client, deps.clock);
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const raw = this.#d.caches.policies.get(namespace, name);
    if (raw === undefined) {
      await releaseUnusedBucketUser(this.#d, namespace);
      return {};
    }
    const ns = namespace ?? 'default';
    const backend = policyBackend(name, this.#d.settings);
    if (raw.metadata.deletionTimestamp !== undefined) {
      if (!(raw.metadata.finalizers ?? []).includes(POLICY_FINALIZER)) return {};
      // A namespace being deleted takes its routes along, and the operator's rights there may be
      // gone already (its RoleBinding deleted first): then only the finalizer is let go.
      const terminating =
        (await this.#d.client.get(resourceTypes.namespace, undefined, ns).catch(() => undefined))
          ?.metadata.deletionTimestamp !== undefined;
      if (!terminating) {
        const routes = await listIfInstalled(this.#d.client, resourceTypes.httpRoute, ns);
        for (const route of planFilters(routes ?? [], backend, new Map()))
          await this.#d.client.update(route);
      }
      await releaseFinalizer(this.#d.client, raw, POLICY_FINALIZER, POLICY_FIELD_MANAGER);
      return {};
    }

    const parsed = rateLimitPolicySchema.safeParse(raw);
    if (!parsed.success) {
      this.#d.events.event(
        raw,
        'Warning',
        EventReasons.InvalidSpec,
        `spec is invalid: ${describeIssues(parsed.error)}; fix the RateLimitPolicy`,
      );
      return {};
    }
    const policy = parsed.data;
    // First of all: no filter is written that a deletion could leave behind.
    await holdFinalizer(this.#d.client, raw, POLICY_FINALIZER, POLICY_FIELD_MANAGER);

    const observed = await this.#observe(raw, policy, ns);
    let plan;
    try {
      plan = planPolicy(policy, this.#d.settings, observed);
    } catch (err) {
      if (!(err instanceof InvalidSpecError)) throw err;
      this.#d.events.event(raw, 'Warning', EventReasons.InvalidSpec, err.message);
      await this.#writeStatus(
        raw,
        everyTarget(policy, {
          status: 'False',
          reason: PolicyReasons.Invalid,
          message: err.message,
        }),
      );
      return {};
    }

    const conflicts = await this.#foreignChildren(policy, plan.objects);
    if (conflicts.length > 0) {
      const message = `${conflicts.join('; ')}. The operator does not adopt objects it did not create; delete them or give the RateLimitPolicy another name`;
      this.#d.events.event(raw, 'Warning', EventReasons.Conflict, message);
      await this.#writeStatus(
        raw,
        everyTarget(policy, { status: 'False', reason: PolicyReasons.Conflicted, message }),
      );
      return { waiting: true };
    }

    const changed: string[] = [];
    for (const desired of plan.objects) {
      const outcome = await this.#d.applier.apply(desired, this.#cacheOf(desired.kind));
      if (outcome.changed) changed.push(`${desired.kind} ${desired.metadata.name}`);
    }
    for (const [kind, childName] of plan.stale) {
      const live = this.#cacheOf(kind).get(namespace, childName);
      if (
        live !== undefined &&
        controllerOf(live, policy.kind)?.uid === policy.metadata.uid &&
        (await this.#d.applier.remove(live))
      )
        changed.push(`deleted ${kind} ${childName}`);
    }
    for (const route of plan.routeUpdates) {
      await this.#d.client.update(route);
      changed.push(`the ExternalAuth filters of HTTPRoute ${route.metadata.name}`);
    }
    if (changed.length > 0) {
      this.#d.log.info({ policy: key, changed }, 'applied');
      this.#d.events.event(raw, 'Normal', EventReasons.Applied, `applied ${changed.join(', ')}`);
    }
    await this.#writeStatus(raw, plan.ancestors);
    const missing = plan.ancestors.some((a) => a.accepted.reason === PolicyReasons.TargetNotFound);
    return missing ? { waiting: true } : { requeueAfterMs: POLICY_POLL_MS };
  }

  async #observe(raw: KubeObject, policy: RateLimitPolicy, ns: string): Promise<PolicyObserved> {
    const [routes, gateways, externalAuth] = await Promise.all([
      listIfInstalled(this.#d.client, resourceTypes.httpRoute, ns),
      listIfInstalled(this.#d.client, resourceTypes.gateway, ns),
      this.#externalAuth.has(),
    ]);
    const peers = this.#d.caches.policies.list(ns).flatMap((p) => {
      const parsed = rateLimitPolicySchema.safeParse(p);
      return parsed.success ? [parsed.data] : [];
    });
    return {
      routes,
      gateways,
      peers,
      externalAuth,
      redisUrlData: await this.#redisUrlData(raw, policy, ns),
    };
  }

  /** The operator's default Redis as the namespace's own user, when the policy names no Redis and the default is a Secret. */
  async #redisUrlData(
    raw: KubeObject,
    policy: RateLimitPolicy,
    ns: string,
  ): Promise<string | undefined> {
    const source = usesDefaultRedisSecret(decisionRoute(policy), this.#d.settings)
      ? this.#d.settings.defaultRedisSecret
      : undefined;
    if (source === undefined) {
      // The policy left the default Redis (its copy is still there): its namespace's user may go.
      if (
        this.#d.caches.secrets.get(ns, routeRedisSecretName(decisionName(policy.metadata.name))) !==
        undefined
      )
        await releaseUnusedBucketUser(this.#d, ns);
      return undefined;
    }
    const admin = await readSecretKey(this.#d.client, source);
    if (admin === undefined) {
      this.#d.events.event(
        raw,
        'Warning',
        EventReasons.RedisSecretMissing,
        `the operator's default Redis Secret ${source.namespace}/${source.name} (key ${source.key}) is missing or empty; the decision pods cannot start until it exists`,
      );
      return undefined;
    }
    return namespaceRedisUrlData(this.#d.redisUsers, admin, ns, 'bucket');
  }

  #cacheOf(kind: string): Informer {
    const { configMaps, deployments, services, secrets, networkPolicies, podDisruptionBudgets } =
      this.#d.caches;
    const byKind: Record<string, Informer> = {
      ConfigMap: configMaps,
      Deployment: deployments,
      Service: services,
      Secret: secrets,
      NetworkPolicy: networkPolicies,
      PodDisruptionBudget: podDisruptionBudgets,
    };
    const cache = byKind[kind];
    if (cache === undefined) throw new Error(`no cache of ${kind}`);
    return cache;
  }

  /** Children whose name is taken by an object this policy does not control (cache first, then one live GET). */
  async #foreignChildren(
    policy: RateLimitPolicy,
    objects: readonly KubeObject[],
  ): Promise<string[]> {
    const lives = await Promise.all(
      objects.map(
        (o) =>
          this.#cacheOf(o.kind).get(o.metadata.namespace, o.metadata.name) ??
          this.#d.client.get(
            resourceTypeOf(o.apiVersion, o.kind),
            o.metadata.namespace,
            o.metadata.name,
          ),
      ),
    );
    return lives.flatMap((live) => foreignObjectProblem(live, policy) ?? []);
  }

  async #writeStatus(raw: KubeObject, planned: readonly PlannedAncestor[]): Promise<void> {
    const ancestors = ancestorStatuses(
      previousAncestors(raw['status']),
      planned,
      raw.metadata.generation,
      this.#d.clock.now(),
    );
    await this.#d.applier.applyStatus(raw, { ancestors, service: decisionName(raw.metadata.name) });
  }
}
