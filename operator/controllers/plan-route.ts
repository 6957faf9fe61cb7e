// The desired state of one RateLimitRoute as a pure function of its spec, the operator's settings
// and what the reconciler observed before (the team's Deployment, the upstream Service, the
// namespace's Redis URL, ...): no I/O, so every branch is tested without an API server. The
// reconciler gets, plans, applies what the plan lists and writes the status the plan describes.
import {
  rateLimitRouteSchema,
  RESERVED_ROUTE_NAME_RULE,
  RESERVED_ROUTE_NAMES,
  type RateLimitRoute,
} from '../api/index.ts';
import { routeConfigMap } from '../resources/route/config-map.ts';
import { routeDeployment } from '../resources/route/deployment.ts';
import { injectionService } from '../resources/route/injection.ts';
import {
  routeUpstreamNetworkPolicyName,
  SIDECAR_CONFIG_KEY,
  serviceNameProblem,
} from '../resources/route/names.ts';
import {
  routeNetworkPolicy,
  routeWantsNetworkPolicy,
  upstreamNetworkPolicy,
} from '../resources/route/network-policy.ts';
import { routePodDisruptionBudget } from '../resources/route/pod-disruption-budget.ts';
import { usesDefaultRedisSecret } from '../resources/route/redis.ts';
import {
  deploymentReplicas,
  labelSelectorString,
  routeReplicas,
  selectorString,
} from '../resources/route/scale.ts';
import { routeService } from '../resources/route/service.ts';
import { routeSelectorLabels } from '../resources/shared/metadata.ts';
import { routeRedisSecret, routeRedisSecretName } from '../resources/shared/redis-url-secret.ts';
import type { ResourceSettings } from '../resources/shared/settings.ts';
import { InvalidSpecError } from '../runtime/errors.ts';
import { asRecord, type KubeObject } from '../runtime/kube-object.ts';
import { EventReasons, Reasons, type EventReason, type ReadyState } from './conditions.ts';
import { deploymentReadiness, type DeploymentReadiness } from './deployment-readiness.ts';
import { describeIssues } from './spec-issues.ts';
import type { UpstreamService } from './upstream-service.ts';

/** The reconciler's cache that holds a child of this kind. */
export type RouteChildCache =
  | 'configMaps'
  | 'deployments'
  | 'services'
  | 'networkPolicies'
  | 'podDisruptionBudgets'
  | 'secrets';

/** What the reconciler read before planning. */
export interface RouteObserved {
  /** spec.targetRef's Deployment as read this reconcile; undefined: the route runs its own. */
  teamDeployment?: KubeObject | undefined;
  /** spec.upstream's Service as read (never `refused`: the reconciler stops before planning). */
  upstream?: UpstreamService | undefined;
  /** The default Redis's URL as the namespace's own user; undefined: none to write now. */
  redisUrlData?: string | undefined;
  /** Why the namespace's Redis user could not be made (Redis unreachable): its Secret is left as it is. */
  redisUserProblem?: string | undefined;
  /** spec.redis.secretRef's Secret: undefined when it does not exist, null when not read (no secretRef, or no right to look). */
  redisSecretRef: KubeObject | undefined | null;
  /** Whether the namespace's auth server Deployment exists. */
  authServerRunning: boolean;
}

export interface RoutePlan {
  ok: true;
  /** In apply order: the Redis Secret and the ConfigMap first, so that new pods find them. */
  children: Array<{ object: KubeObject; cache: RouteChildCache }>;
  /** Children the route may have had and no longer wants (the policy switched off, one replica left). */
  stale: Array<{ name: string; cache: RouteChildCache }>;
  /** The sidecar's config (its hash rolls the pods, the team's too). */
  configText: string;
  /** Warning Events to record once the children are applied: things the route's owner must fix. */
  warnings: Array<{ reason: EventReason; message: string }>;
}

export type RoutePlanResult = RoutePlan | { ok: false; problem: string };

/** The route as the operator reads it, or why it cannot: a spec the CRD let through and the operator refuses, or a name the API server refuses. */
export function parseRoute(
  raw: KubeObject,
): { route: RateLimitRoute; problem?: undefined } | { route?: undefined; problem: string } {
  const parsed = rateLimitRouteSchema.safeParse(raw);
  if (!parsed.success)
    return { problem: `spec is invalid: ${describeIssues(parsed.error)}; fix the RateLimitRoute` };
  const name = raw.metadata.name;
  // The API server refuses these names; a route made before that rule is refused here.
  const problem =
    serviceNameProblem(name) ??
    ((RESERVED_ROUTE_NAMES as readonly string[]).includes(name)
      ? RESERVED_ROUTE_NAME_RULE
      : undefined);
  return problem === undefined ? { route: parsed.data } : { problem };
}

export function planRoute(
  route: RateLimitRoute,
  settings: ResourceSettings,
  observed: RouteObserved,
): RoutePlanResult {
  const name = route.metadata.name;
  const { teamDeployment, upstream } = observed;
  const children: RoutePlan['children'] = [];
  const stale: RoutePlan['stale'] = [];
  let configText: string;
  try {
    const configMap = routeConfigMap(route, settings);
    configText = (configMap['data'] as Record<string, string>)[SIDECAR_CONFIG_KEY] ?? '';
    // The namespace's copy of the default Redis Secret first of all: new pods must find it.
    if (observed.redisUrlData !== undefined)
      children.push({ object: routeRedisSecret(route, observed.redisUrlData), cache: 'secrets' });
    else if (!usesDefaultRedisSecret(route, settings))
      stale.push({ name: routeRedisSecretName(name), cache: 'secrets' });
    children.push({ object: configMap, cache: 'configMaps' });
    // spec.targetRef: the team's Deployment takes the place of the route's own.
    if (teamDeployment === undefined) {
      children.push(
        { object: routeDeployment(route, settings, configText), cache: 'deployments' },
        { object: routeService(route, settings), cache: 'services' },
      );
    } else {
      children.push({
        object: injectionService(route, settings, teamDeployment),
        cache: 'services',
      });
    }
    // Around the limiter: the sidecar's pods (the route's or the team's) open only the sidecar
    // ports, the upstream's pods only to the gateway. An upstream Service gone or without a
    // selector keeps the policy it had: its pods may still be there.
    const policies = routeWantsNetworkPolicy(route, settings);
    if (policies)
      children.push({ object: routeNetworkPolicy(route, settings), cache: 'networkPolicies' });
    else stale.push({ name, cache: 'networkPolicies' });
    if (policies && upstream?.kind === 'selector')
      children.push({
        object: upstreamNetworkPolicy(route, upstream.selector),
        cache: 'networkPolicies',
      });
    else if (!policies || upstream === undefined)
      stale.push({ name: routeUpstreamNetworkPolicyName(name), cache: 'networkPolicies' });
    // The team's pods are theirs to keep available: no budget over pods the route does not run.
    const budget = teamDeployment === undefined ? routePodDisruptionBudget(route) : undefined;
    if (budget !== undefined) children.push({ object: budget, cache: 'podDisruptionBudgets' });
    else stale.push({ name, cache: 'podDisruptionBudgets' });
  } catch (err) {
    if (err instanceof InvalidSpecError) return { ok: false, problem: err.message };
    throw err;
  }
  return {
    ok: true,
    children,
    stale,
    configText,
    warnings: routeWarnings(route, settings, observed),
  };
}

function routeWarnings(
  route: RateLimitRoute,
  settings: ResourceSettings,
  observed: RouteObserved,
): RoutePlan['warnings'] {
  const warnings: RoutePlan['warnings'] = [];
  const namespace = route.metadata.namespace ?? 'default';
  if (observed.upstream?.kind === 'unprotected' && routeWantsNetworkPolicy(route, settings))
    warnings.push({ reason: EventReasons.UpstreamUnprotected, message: observed.upstream.message });
  // A missing Secret (or key) is the kubelet's to report (the pod stays in ContainerCreating), so
  // it does not make the spec invalid; a Warning Event says it where the route's owner looks.
  const ref = route.spec.redis?.secretRef;
  const secret = observed.redisSecretRef;
  const data = asRecord(secret?.['data']);
  if (ref !== undefined && secret !== null && !(data !== undefined && ref.key in data)) {
    const what =
      secret === undefined
        ? `Secret ${ref.name} does not exist`
        : `Secret ${ref.name} has no key ${ref.key}`;
    warnings.push({
      reason: EventReasons.RedisSecretMissing,
      message: `spec.redis.secretRef: ${what}; the route's pods cannot start until it does (kubectl -n ${route.metadata.namespace} create secret generic ${ref.name} --from-literal=${ref.key}=redis://...)`,
    });
  }
  // A jwt key without an issuer of its own trusts the namespace's auth server, which the operator
  // runs only while an OAuthClient exists there: without it every request of the route is a 503.
  const { key } = route.spec.limiter;
  if (key.source === 'jwt' && key.issuer === undefined && !observed.authServerRunning) {
    warnings.push({
      reason: EventReasons.AuthServerMissing,
      message: `spec.limiter.key is jwt without an issuer, so it trusts the Portcullis auth server of namespace ${namespace}, which runs only while an OAuthClient exists there: until one does (or spec.limiter.key.issuer names another issuer) the sidecars cannot fetch signing keys and answer 503`,
    });
  }
  const source = usesDefaultRedisSecret(route, settings) ? settings.defaultRedisSecret : undefined;
  if (observed.redisUserProblem !== undefined) {
    warnings.push({
      reason: EventReasons.RedisUserFailed,
      message: `could not make the namespace's Redis user with the operator's default Redis (${observed.redisUserProblem}); retrying`,
    });
  } else if (source !== undefined && observed.redisUrlData === undefined) {
    warnings.push({
      reason: EventReasons.RedisSecretMissing,
      message: `the operator's default Redis Secret ${source.namespace}/${source.name} (key ${source.key}) is missing or empty; the route's pods cannot start until it exists (the chart's redis.existingSecret)`,
    });
  }
  return warnings;
}

/** The Ready condition from the pods counted (the route's own Deployment, or spec.targetRef's as applied). */
export function routeReadyState(
  route: RateLimitRoute,
  settings: Pick<ResourceSettings, 'servicePort'>,
  deployment: KubeObject | undefined,
): { state: ReadyState; readiness: DeploymentReadiness } {
  // Replicas left to an autoscaler: ready means as many pods as the Deployment asks for now.
  const readiness = deploymentReadiness(
    deployment,
    routeReplicas(route) ?? deploymentReplicas(deployment) ?? 1,
  );
  const state: ReadyState = readiness.ready
    ? {
        status: 'True',
        reason: Reasons.Ready,
        message: `${readiness.message}; Service ${route.metadata.name} forwards port ${settings.servicePort} to the sidecars`,
      }
    : { status: 'False', reason: Reasons.Progressing, message: readiness.message };
  return { state, readiness };
}

/**
 * The status fields besides the condition: the Service (named as the route) and status.selector,
 * what /scale reports and an autoscaler lists pods by: the selector of the pods status.replicas
 * counts. Those are the route's own pods (the gateway labels), or with spec.targetRef the team
 * Deployment's, which carry none of the gateway labels: its own selector.
 */
export function routeStatusFields(
  route: RateLimitRoute,
  teamDeployment: KubeObject | undefined,
): Record<string, unknown> {
  const selector =
    route.spec.targetRef === undefined
      ? selectorString(routeSelectorLabels(route.metadata.name))
      : labelSelectorString(asRecord(teamDeployment?.['spec'])?.['selector']);
  return selector === undefined
    ? { service: route.metadata.name }
    : { service: route.metadata.name, selector };
}
