// The pure core of the RateLimitPolicy reconciler: from the policy, the operator's settings and
// what was observed in the policy's namespace (its HTTPRoutes and Gateways, the other policies,
// whether the HTTPRoute CRD has the ExternalAuth filter), what should exist (the decision
// service's objects, the HTTPRoutes with the filter on exactly the accepted rules) and what the
// status says per ancestor (each target judged in policy-targets.ts). No I/O: the reconciler reads,
// calls this, writes.
import type { PolicyTargetRef, RateLimitPolicy } from '../api/index.ts';
import type { KubeObject } from '../runtime/kube-object.ts';
import type { ResourceSettings } from '../resources/shared/settings.ts';
import { routeRedisSecretName } from '../resources/shared/redis-url-secret.ts';
import {
  decisionConfigMap,
  decisionDeployment,
  decisionName,
  decisionNetworkPolicy,
  decisionPodDisruptionBudget,
  decisionPorts,
  decisionRedisSecret,
  decisionService,
  renderDecisionConfig,
} from './decision-resources.ts';
import {
  routeWithFilters,
  type ExternalAuthBackend,
  type WantedRules,
} from './external-auth-filter.ts';
import type { AncestorRef, PlannedAncestor } from './policy-status.ts';
import { judgeTarget, type TargetOutcome } from './policy-targets.ts';

export interface PolicyObserved {
  /** HTTPRoutes of the policy's namespace; undefined: the HTTPRoute kind is not installed. */
  routes: readonly KubeObject[] | undefined;
  /** Gateways of the policy's namespace; undefined: the kind is not installed. */
  gateways: readonly KubeObject[] | undefined;
  /** The other valid policies of the namespace (the older one wins a target both name). */
  peers: readonly RateLimitPolicy[];
  /** The installed HTTPRoute CRD offers the ExternalAuth filter. */
  externalAuth: boolean;
  /** The copy of the operator's default Redis Secret (base64 URL), when the policy uses it and it could be made. */
  redisUrlData?: string | undefined;
}

export interface PolicyPlan {
  /** To apply, in order (new pods must find their config and Secret first). */
  objects: KubeObject[];
  /** Children the policy may have had and no longer wants: [kind, name]. */
  stale: Array<['Secret' | 'PodDisruptionBudget', string]>;
  /** HTTPRoutes to write back (the filter added or removed); routes already right are absent. */
  routeUpdates: KubeObject[];
  ancestors: PlannedAncestor[];
}

const refKey = (r: AncestorRef): string =>
  `${r.kind}/${r.namespace ?? ''}/${r.name}/${r.sectionName ?? ''}`;

/** One entry per ancestor (at most 16): a refusal of any target under it wins over an acceptance. */
function mergeAncestors(outcomes: readonly TargetOutcome[]): PlannedAncestor[] {
  const byKey = new Map<string, PlannedAncestor>();
  for (const o of outcomes) {
    for (const ref of o.ancestors) {
      const key = refKey(ref);
      const old = byKey.get(key);
      if (old === undefined || (old.accepted.status === 'True' && o.accepted.status === 'False'))
        byKey.set(key, {
          ancestorRef: ref,
          accepted: o.accepted,
          ...(o.wired === undefined ? {} : { wired: o.wired }),
        });
    }
  }
  return [...byKey.values()].slice(0, 16);
}

/** Which rules of each HTTPRoute the policy's filter belongs on: the accepted targets only. */
function wantedRules(
  targets: readonly PolicyTargetRef[],
  outcomes: readonly TargetOutcome[],
): Map<string, WantedRules> {
  const wanted = new Map<string, WantedRules>();
  targets.forEach((t, i) => {
    if (t.kind !== 'HTTPRoute' || outcomes[i]?.accepted.status !== 'True') return;
    const old = wanted.get(t.name);
    if (t.sectionName === undefined || old === 'all') wanted.set(t.name, 'all');
    else wanted.set(t.name, new Set([...(old ?? []), t.sectionName]));
  });
  return wanted;
}

/** The filter edits alone: every HTTPRoute of the namespace with the policy's filter exactly where wanted (none: removed everywhere). */
export function planFilters(
  routes: readonly KubeObject[],
  backend: ExternalAuthBackend,
  wanted: ReadonlyMap<string, WantedRules>,
): KubeObject[] {
  return routes.flatMap((r) => routeWithFilters(r, backend, wanted.get(r.metadata.name)) ?? []);
}

/** The decision Service of the policy of this name, as its filter names it. */
export function policyBackend(policyName: string, settings: ResourceSettings): ExternalAuthBackend {
  return { service: decisionName(policyName), port: decisionPorts(settings).grpc };
}

/** Throws InvalidSpecError when the decision service would refuse the limiter (the message names the field). */
export function planPolicy(
  policy: RateLimitPolicy,
  settings: ResourceSettings,
  observed: PolicyObserved,
): PolicyPlan {
  const name = decisionName(policy.metadata.name);
  const configText = renderDecisionConfig(policy, settings);
  const objects: KubeObject[] = [];
  const stale: PolicyPlan['stale'] = [];
  if (observed.redisUrlData !== undefined)
    objects.push(decisionRedisSecret(policy, observed.redisUrlData));
  else stale.push(['Secret', routeRedisSecretName(name)]);
  objects.push(
    decisionConfigMap(policy, configText),
    decisionDeployment(policy, settings, configText),
    decisionService(policy, settings),
    decisionNetworkPolicy(policy, settings),
  );
  const budget = decisionPodDisruptionBudget(policy);
  if (budget !== undefined) objects.push(budget);
  else stale.push(['PodDisruptionBudget', name]);

  const outcomes = policy.spec.targetRefs.map((t) => judgeTarget(policy, t, observed, name));
  const routeUpdates =
    observed.externalAuth && observed.routes !== undefined
      ? planFilters(
          observed.routes,
          policyBackend(policy.metadata.name, settings),
          wantedRules(policy.spec.targetRefs, outcomes),
        )
      : [];
  return { objects, stale, routeUpdates, ancestors: mergeAncestors(outcomes) };
}
