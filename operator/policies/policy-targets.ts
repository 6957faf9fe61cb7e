// How the RateLimitPolicy plan (plan-policy.ts) judges each of a policy's targets: in the policy's
// namespace, there, its rule there (sectionName), not already taken by an older policy; and how the
// accepted target is wired (the HTTPRoute ExternalAuth filter, or by hand for a Gateway); with the
// ancestors its status entry goes under.
import { GATEWAY_API_GROUP, type PolicyTargetRef, type RateLimitPolicy } from '../api/index.ts';
import { asRecord, type KubeObject } from '../runtime/kube-object.ts';
import type { PolicyObserved } from './plan-policy.ts';
import {
  PolicyReasons,
  type AncestorRef,
  type PlannedAncestor,
  type PolicyCondition,
} from './policy-status.ts';

const creation = (p: RateLimitPolicy): string =>
  typeof p.metadata['creationTimestamp'] === 'string' ? p.metadata['creationTimestamp'] : '';

/** GEP-713: the older policy wins a conflict; on a tie, the name first in alphabetical order. */
export function olderPolicy(a: RateLimitPolicy, b: RateLimitPolicy): boolean {
  const ca = creation(a);
  const cb = creation(b);
  return ca !== cb ? ca < cb : a.metadata.name < b.metadata.name;
}

/** Two references reach the same requests: one object, and the same section or either the whole of it. */
function overlaps(a: PolicyTargetRef, b: PolicyTargetRef): boolean {
  return (
    a.kind === b.kind &&
    a.name === b.name &&
    (a.sectionName === undefined || b.sectionName === undefined || a.sectionName === b.sectionName)
  );
}

const targetText = (t: PolicyTargetRef): string =>
  `${t.kind} ${t.name}${t.sectionName === undefined ? '' : ` (section ${t.sectionName})`}`;

function selfRef(t: PolicyTargetRef, namespace: string): AncestorRef {
  return {
    group: GATEWAY_API_GROUP,
    kind: t.kind,
    namespace: t.namespace ?? namespace,
    name: t.name,
    ...(t.sectionName === undefined ? {} : { sectionName: t.sectionName }),
  };
}

/** The Gateways an HTTPRoute attaches to (spec.parentRefs of kind Gateway); none: the route itself. */
function routeAncestors(route: KubeObject, t: PolicyTargetRef, namespace: string): AncestorRef[] {
  const parents = asRecord(route['spec'])?.['parentRefs'];
  const refs: AncestorRef[] = [];
  for (const p of Array.isArray(parents) ? parents : []) {
    const parent = asRecord(p);
    const name = parent?.['name'];
    if (
      typeof name !== 'string' ||
      (parent?.['kind'] ?? 'Gateway') !== 'Gateway' ||
      (parent?.['group'] ?? GATEWAY_API_GROUP) !== GATEWAY_API_GROUP
    )
      continue;
    const ns = typeof parent?.['namespace'] === 'string' ? parent['namespace'] : namespace;
    const section = parent?.['sectionName'];
    refs.push({
      group: GATEWAY_API_GROUP,
      kind: 'Gateway',
      namespace: ns,
      name,
      ...(typeof section === 'string' ? { sectionName: section } : {}),
    });
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

export interface TargetOutcome {
  ancestors: AncestorRef[];
  accepted: PolicyCondition;
  wired?: PolicyCondition;
}

export function judgeTarget(
  policy: RateLimitPolicy,
  t: PolicyTargetRef,
  observed: PolicyObserved,
  service: string,
): TargetOutcome {
  const namespace = policy.metadata.namespace ?? 'default';
  if (t.namespace !== undefined && t.namespace !== namespace) {
    return {
      ancestors: [selfRef(t, namespace)],
      accepted: {
        status: 'False',
        reason: PolicyReasons.Invalid,
        message: `${targetText(t)} is in namespace ${t.namespace}: a policy attaches to objects of its own namespace (${namespace}) only`,
      },
    };
  }
  const objects = t.kind === 'HTTPRoute' ? observed.routes : observed.gateways;
  const target = objects?.find((o) => o.metadata.name === t.name);
  if (target === undefined) {
    const why =
      objects === undefined
        ? `the ${t.kind} kind is not installed in this cluster (Gateway API CRDs)`
        : `${targetText(t)} does not exist in namespace ${namespace}`;
    return {
      ancestors: [selfRef(t, namespace)],
      accepted: {
        status: 'False',
        reason: PolicyReasons.TargetNotFound,
        message: `${why}; the policy attaches once it does`,
      },
    };
  }
  const ancestors =
    t.kind === 'HTTPRoute' ? routeAncestors(target, t, namespace) : [selfRef(t, namespace)];
  if (
    t.kind === 'HTTPRoute' &&
    t.sectionName !== undefined &&
    !ruleNames(target).includes(t.sectionName)
  ) {
    return {
      ancestors,
      accepted: {
        status: 'False',
        reason: PolicyReasons.TargetNotFound,
        message: `HTTPRoute ${t.name} has no rule named ${t.sectionName} (spec.rules[].name)`,
      },
    };
  }
  const winner = observed.peers.find(
    (p) =>
      p.metadata.name !== policy.metadata.name &&
      p.metadata.deletionTimestamp === undefined &&
      olderPolicy(p, policy) &&
      p.spec.targetRefs.some((o) => overlaps(o, t)),
  );
  if (winner !== undefined) {
    return {
      ancestors,
      accepted: {
        status: 'False',
        reason: PolicyReasons.Conflicted,
        message: `RateLimitPolicy ${winner.metadata.name}, which is older, already targets ${targetText(t)}; this policy does not apply there`,
      },
    };
  }
  const accepted: PolicyCondition = {
    status: 'True',
    reason: PolicyReasons.Accepted,
    message: `the decision Service ${service} limits ${targetText(t)}`,
  };
  if (t.kind === 'Gateway') {
    return {
      ancestors,
      accepted,
      wired: {
        status: 'False',
        reason: PolicyReasons.ManualWiringRequired,
        message: `Gateway API has no gateway-wide ExternalAuth filter: point your gateway's external authorization (Envoy Gateway SecurityPolicy extAuth, Istio CUSTOM AuthorizationPolicy, Traefik ForwardAuth) at Service ${service} yourself, as ${MANUAL_WIRING} shows`,
      },
    };
  }
  if (!observed.externalAuth) {
    return {
      ancestors,
      accepted,
      wired: {
        status: 'False',
        reason: PolicyReasons.ExternalAuthUnsupported,
        message: `the installed HTTPRoute CRD has no ExternalAuth filter (Gateway API's experimental channel has it): wire Service ${service} into your gateway by hand, as ${MANUAL_WIRING} shows, or install the experimental channel's CRDs`,
      },
    };
  }
  return {
    ancestors,
    accepted,
    wired: {
      status: 'True',
      reason: PolicyReasons.ExternalAuthFilter,
      message: `the ExternalAuth filter of ${targetText(t)} calls Service ${service} (gRPC)`,
    },
  };
}

/** The same Accepted=False for every target (the policy as a whole could not be applied). */
export function everyTarget(
  policy: RateLimitPolicy,
  accepted: PlannedAncestor['accepted'],
): PlannedAncestor[] {
  const ns = policy.metadata.namespace ?? 'default';
  return policy.spec.targetRefs.slice(0, 16).map((t) => ({
    ancestorRef: {
      group: t.group,
      kind: t.kind,
      namespace: t.namespace ?? ns,
      name: t.name,
      ...(t.sectionName === undefined ? {} : { sectionName: t.sectionName }),
    },
    accepted,
  }));
}
