// A RateLimitPolicy's status, the Gateway API way (PolicyAncestorStatus): one entry per ancestor
// (a Gateway) with this controller's name and two conditions. `Accepted` has the standard reasons;
// `portcullis.dev/Wired` says whether the gateway calls the decision service (an ExternalAuth
// filter the operator keeps on the route), or what to wire by hand.
import {
  policyAncestorStatusSchema,
  type Condition,
  type PolicyAncestorStatus,
} from '../api/index.ts';
import { asRecord } from '../runtime/kube-object.ts';

export const POLICY_CONTROLLER_NAME = 'portcullis.dev/operator';
export const CONDITION_ACCEPTED = 'Accepted';
export const CONDITION_WIRED = 'portcullis.dev/Wired';

export const PolicyReasons = {
  /** Accepted: the target exists and no older policy targets it. */
  Accepted: 'Accepted',
  /** Accepted False: the target (or the rule sectionName names) does not exist. */
  TargetNotFound: 'TargetNotFound',
  /** Accepted False: an older policy targets the same route, rule or Gateway (it wins, as GEP-713 says). */
  Conflicted: 'Conflicted',
  /** Accepted False: the reference is not allowed (another namespace), or the limiter would be refused. */
  Invalid: 'Invalid',
  /** Wired True: the operator keeps an ExternalAuth filter to the decision Service on the targeted rules. */
  ExternalAuthFilter: 'ExternalAuthFilter',
  /** Wired False: the installed HTTPRoute CRD has no ExternalAuth filter (standard channel). */
  ExternalAuthUnsupported: 'ExternalAuthUnsupported',
  /** Wired False: a Gateway target: Gateway API has no gateway-wide filter, the gateway's own extension is wired by hand. */
  ManualWiringRequired: 'ManualWiringRequired',
} as const;
export type PolicyReason = (typeof PolicyReasons)[keyof typeof PolicyReasons];

export interface PolicyCondition {
  status: 'True' | 'False';
  reason: PolicyReason;
  message: string;
}

export interface AncestorRef {
  group: string;
  kind: string;
  namespace?: string;
  name: string;
  sectionName?: string;
}

export interface PlannedAncestor {
  ancestorRef: AncestorRef;
  accepted: PolicyCondition;
  /** Absent while not accepted: nothing is wired. */
  wired?: PolicyCondition;
}

const sameRef = (a: unknown, b: AncestorRef): boolean => JSON.stringify(a) === JSON.stringify(b);
const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

/** The ancestors of the live status that this controller wrote, parsed with the API schema (never cast). */
export function previousAncestors(status: unknown): PolicyAncestorStatus[] {
  const list = asRecord(status)?.['ancestors'];
  if (!Array.isArray(list)) return [];
  return list.flatMap((a: unknown) => {
    const parsed = policyAncestorStatusSchema.safeParse(a);
    return parsed.success && parsed.data.controllerName === POLICY_CONTROLLER_NAME
      ? [parsed.data]
      : [];
  });
}

/** status.ancestors for the planned entries; lastTransitionTime moves only when a condition's status does. */
export function ancestorStatuses(
  previous: readonly PolicyAncestorStatus[],
  planned: readonly PlannedAncestor[],
  generation: number | undefined,
  nowMs: number,
): PolicyAncestorStatus[] {
  return planned.map((p) => {
    const old = previous.find((a) => sameRef(a.ancestorRef, p.ancestorRef))?.conditions ?? [];
    const condition = (type: string, c: PolicyCondition): Condition => {
      const before = old.find((o) => o.type === type);
      return {
        type,
        status: c.status,
        ...(generation === undefined ? {} : { observedGeneration: generation }),
        lastTransitionTime:
          before !== undefined && before.status === c.status
            ? before.lastTransitionTime
            : rfc3339(nowMs),
        reason: c.reason,
        message: c.message,
      };
    };
    const conditions = [
      condition(CONDITION_ACCEPTED, p.accepted),
      ...(p.wired === undefined ? [] : [condition(CONDITION_WIRED, p.wired)]),
    ];
    return { ancestorRef: p.ancestorRef, controllerName: POLICY_CONTROLLER_NAME, conditions };
  });
}
