// The pure core of the RateLimitPolicy reconciler: from the policy, the operator's settings and
// what was observed in the policy's namespace (its HTTPRoutes and Gateways, the other policies,
// whether the HTTPRoute CRD has the ExternalAuth filter), what should exist (the decision
// service's objects, the HTTPRoutes with the filter on exactly the accepted rules) and what the
// status says per ancestor. No I/O: the reconciler reads, calls this, writes.
import { GATEWAY_API_GROUP, type PolicyTargetRef, type RateLimitPolicy } from '../api/index.ts';
import { asRecord, type KubeObject } from '../runtime/kube-object.ts';
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
import { routeWithFilters, type ExternalAuthBackend, type WantedRules } from './external-auth-filter.ts';
import { PolicyReasons, type AncestorRef, type PlannedAncestor, type PolicyCondition } from './policy-status.ts';

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

const creation = (p: RateLimitPolicy): string => (typeof p.metadata['creationTimestamp'] === 'string' ? p.metadata['creationTimestamp'] : '');

/** GEP-713: the older policy wins a conflict; on a tie, the name first in alphabetical order. */
export function olderPolicy(a: RateLimitPolicy, b: RateLimitPolicy): boolean {
  const ca = creation(a);
  const cb = creation(b);
  return ca !== cb ? ca < cb : a.metadata.name < b.metadata.name;
}

/** Two references reach the same requests: one object, and the same section or either the whole of it. */
function overlaps(a: PolicyTargetRef, b: PolicyTargetRef): boolean {
  return a.kind === b.kind && a.name === b.name && (a.sectionName === undefined || b.sectionName === undefined || a.sectionName === b.sectionName);
}

const targetText = (t: PolicyTargetRef): string => `${t.kind} ${t.name}${t.sectionName === undefined ? '' : ` (section ${t.sectionName})`}`;

function selfRef(t: PolicyTargetRef, namespace: string): AncestorRef {
  return { group: GATEWAY_API_GROUP, kind: t.kind, namespace: t.namespace ?? namespace, name: t.name, ...(t.sectionName === undefined ? {} : { sectionName: t.sectionName }) };
}

/** The Gateways an HTTPRoute attaches to (spec.parentRefs of kind Gateway); none: the route itself. */
function routeAncestors(route: KubeObject, t: PolicyTargetRef, namespace: string): AncestorRef[] {
  const parents = asRecord(route['spec'])?.['parentRefs'];
  const refs: AncestorRef[] = [];
  for (const p of Array.isArray(parents) ? parents : []) {
    const parent = asRecord(p);
    const name = parent?.['name'];
    if (typeof name !== 'string' || (parent?.['kind'] ?? 'Gateway') !== 'Gateway' || (parent?.['group'] ?? GATEWAY_API_GROUP) !== GATEWAY_API_GROUP) continue;
    const ns = typeof parent?.['namespace'] === 'string' ? parent['namespace'] : namespace;
    const section = parent?.['sectionName'];
    refs.push({ group: GATEWAY_API_GROUP, kind: 'Gateway', namespace: ns, name, ...(typeof section === 'string' ? { sectionName: section } : {}) });
  }
  return refs.length > 0 ? refs : [selfRef(t, namespace)];
}

const ruleNames = (route: KubeObject): string[] => {
  const rules = asRecord(route['spec'])?.['rules'];
  return (Array.isArray(rules) ? rules : []).flatMap((r: unknown) => {
    const name = asRecord(r)?.['name'];
    return typeof name === 'string' ? [name] : [];
  });
};

const MANUAL_WIRING = 'docs/concepts/gateway.md, "Use with your gateway"';

interface TargetOutcome {
  ancestors: AncestorRef[];
  accepted: PolicyCondition;
  wired?: PolicyCondition;
}

function judgeTarget(policy: RateLimitPolicy, t: PolicyTargetRef, observed: PolicyObserved, service: string): TargetOutcome {
  const namespace = policy.metadata.namespace ?? 'default';
  if (t.namespace !== undefined && t.namespace !== namespace) {
    return { ancestors: [selfRef(t, namespace)], accepted: { status: 'False', reason: PolicyReasons.Invalid, message: `${targetText(t)} is in namespace ${t.namespace}: a policy attaches to objects of its own namespace (${namespace}) only` } };
  }
  const objects = t.kind === 'HTTPRoute' ? observed.routes : observed.gateways;
  const target = objects?.find((o) => o.metadata.name === t.name);
  if (target === undefined) {
    const why = objects === undefined ? `the ${t.kind} kind is not installed in this cluster (Gateway API CRDs)` : `${targetText(t)} does not exist in namespace ${namespace}`;
    return { ancestors: [selfRef(t, namespace)], accepted: { status: 'False', reason: PolicyReasons.TargetNotFound, message: `${why}; the policy attaches once it does` } };
  }
  const ancestors = t.kind === 'HTTPRoute' ? routeAncestors(target, t, namespace) : [selfRef(t, namespace)];
  if (t.kind === 'HTTPRoute' && t.sectionName !== undefined && !ruleNames(target).includes(t.sectionName)) {
    return { ancestors, accepted: { status: 'False', reason: PolicyReasons.TargetNotFound, message: `HTTPRoute ${t.name} has no rule named ${t.sectionName} (spec.rules[].name)` } };
  }
  const winner = observed.peers.find((p) => p.metadata.name !== policy.metadata.name && p.metadata.deletionTimestamp === undefined && olderPolicy(p, policy) && p.spec.targetRefs.some((o) => overlaps(o, t)));
  if (winner !== undefined) {
    return { ancestors, accepted: { status: 'False', reason: PolicyReasons.Conflicted, message: `RateLimitPolicy ${winner.metadata.name}, which is older, already targets ${targetText(t)}; this policy does not apply there` } };
  }
  const accepted: PolicyCondition = { status: 'True', reason: PolicyReasons.Accepted, message: `the decision Service ${service} limits ${targetText(t)}` };
  if (t.kind === 'Gateway') {
    return { ancestors, accepted, wired: { status: 'False', reason: PolicyReasons.ManualWiringRequired, message: `Gateway API has no gateway-wide ExternalAuth filter: point your gateway's external authorization (Envoy Gateway SecurityPolicy extAuth, Istio CUSTOM AuthorizationPolicy, Traefik ForwardAuth) at Service ${service} yourself, as ${MANUAL_WIRING} shows` } };
  }
  if (!observed.externalAuth) {
    return { ancestors, accepted, wired: { status: 'False', reason: PolicyReasons.ExternalAuthUnsupported, message: `the installed HTTPRoute CRD has no ExternalAuth filter (Gateway API's experimental channel has it): wire Service ${service} into your gateway by hand, as ${MANUAL_WIRING} shows, or install the experimental channel's CRDs` } };
  }
  return { ancestors, accepted, wired: { status: 'True', reason: PolicyReasons.ExternalAuthFilter, message: `the ExternalAuth filter of ${targetText(t)} calls Service ${service} (gRPC)` } };
}

const refKey = (r: AncestorRef): string => `${r.kind}/${r.namespace ?? ''}/${r.name}/${r.sectionName ?? ''}`;

/** One entry per ancestor (at most 16): a refusal of any target under it wins over an acceptance. */
function mergeAncestors(outcomes: readonly TargetOutcome[]): PlannedAncestor[] {
  const byKey = new Map<string, PlannedAncestor>();
  for (const o of outcomes) {
    for (const ref of o.ancestors) {
      const key = refKey(ref);
      const old = byKey.get(key);
      if (old === undefined || (old.accepted.status === 'True' && o.accepted.status === 'False')) byKey.set(key, { ancestorRef: ref, accepted: o.accepted, ...(o.wired === undefined ? {} : { wired: o.wired }) });
    }
  }
  return [...byKey.values()].slice(0, 16);
}

/** Which rules of each HTTPRoute the policy's filter belongs on: the accepted targets only. */
function wantedRules(targets: readonly PolicyTargetRef[], outcomes: readonly TargetOutcome[]): Map<string, WantedRules> {
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
export function planFilters(routes: readonly KubeObject[], backend: ExternalAuthBackend, wanted: ReadonlyMap<string, WantedRules>): KubeObject[] {
  return routes.flatMap((r) => routeWithFilters(r, backend, wanted.get(r.metadata.name)) ?? []);
}

/** The decision Service of the policy of this name, as its filter names it. */
export function policyBackend(policyName: string, settings: ResourceSettings): ExternalAuthBackend {
  return { service: decisionName(policyName), port: decisionPorts(settings).grpc };
}

/** Throws InvalidSpecError when the decision service would refuse the limiter (the message names the field). */
export function planPolicy(policy: RateLimitPolicy, settings: ResourceSettings, observed: PolicyObserved): PolicyPlan {
  const name = decisionName(policy.metadata.name);
  const configText = renderDecisionConfig(policy, settings);
  const objects: KubeObject[] = [];
  const stale: PolicyPlan['stale'] = [];
  if (observed.redisUrlData !== undefined) objects.push(decisionRedisSecret(policy, observed.redisUrlData));
  else stale.push(['Secret', routeRedisSecretName(name)]);
  objects.push(decisionConfigMap(policy, configText), decisionDeployment(policy, settings, configText), decisionService(policy, settings), decisionNetworkPolicy(policy, settings));
  const budget = decisionPodDisruptionBudget(policy);
  if (budget !== undefined) objects.push(budget);
  else stale.push(['PodDisruptionBudget', name]);

  const outcomes = policy.spec.targetRefs.map((t) => judgeTarget(policy, t, observed, name));
  const routeUpdates = observed.externalAuth && observed.routes !== undefined ? planFilters(observed.routes, policyBackend(policy.metadata.name, settings), wantedRules(policy.spec.targetRefs, outcomes)) : [];
  return { objects, stale, routeUpdates, ancestors: mergeAncestors(outcomes) };
}
