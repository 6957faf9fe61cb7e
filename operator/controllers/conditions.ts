// The Ready condition and the Events the controllers record: reasons as typed constants
// (controllers and tests agree on them, and a misspelt reason fails to compile), and the
// Kubernetes rule that lastTransitionTime changes only when the status does.
import { CONDITION_READY, conditionSchema, type Condition } from '../api/index.ts';
import { asRecord, type KubeObject } from '../runtime/kube-object.ts';

export const Reasons = {
  /** Route: every child applied and all pods ready. */
  Ready: 'Ready',
  /** Route: children applied, the Deployment is still rolling out or pods are not ready. */
  Progressing: 'Progressing',
  /** The spec passed the CRD but not the operator's own checks (message says which field). */
  InvalidSpec: 'InvalidSpec',
  /** The API server refused a child (message carries its answer: RBAC, quota, admission). */
  ApplyFailed: 'ApplyFailed',
  /** Route: an object named like one of its children exists and is not the route's; nothing written. */
  Conflict: 'Conflict',
  /** Route: spec.targetRef names a Deployment that is missing or cannot take the sidecar (message says why). */
  TargetRefInvalid: 'TargetRefInvalid',
  /** Route: spec.upstream names a Service the route does not forward to (an ExternalName); nothing written. */
  UpstreamInvalid: 'UpstreamInvalid',
  /** Route: spec.targetRef's Deployment already runs another route's sidecar (one route per Deployment). */
  TargetRefInUse: 'TargetRefInUse',
  /** OAuthClient: its Secret exists and the client registry lists it. */
  Registered: 'Registered',
  /** OAuthClient: the Secret exists; the registry does not list the client yet. */
  Registering: 'Registering',
  /** OAuthClient: a Secret of that name exists and belongs to something else. */
  SecretConflict: 'SecretConflict',
} as const;
export type Reason = (typeof Reasons)[keyof typeof Reasons];

/** Reasons of the Events on the custom resources: a Warning repeats the Ready condition's reason, plus these. */
export const EventReasons = {
  ...Reasons,
  /** Route: applied these children (message lists them). */
  Applied: 'Applied',
  /** Route: deleted children it no longer needs (message lists them). */
  Deleted: 'Deleted',
  /** Route with targetRef: the sidecar was taken out of the team's Deployment again. */
  SidecarRemoved: 'SidecarRemoved',
  /** Route: spec.redis.secretRef, or the operator's default Redis Secret, names a Secret or key that does not exist. */
  RedisSecretMissing: 'RedisSecretMissing',
  /** Route: spec.upstream's Service is missing or has no selector, so no NetworkPolicy covers its pods. */
  UpstreamUnprotected: 'UpstreamUnprotected',
  /** Route or OAuthClient: the namespace's Redis user could not be made (Redis unreachable, or its admin may not run ACL SETUSER). */
  RedisUserFailed: 'RedisUserFailed',
  /** Route: a jwt key without an issuer of its own, and no auth server runs in the namespace. */
  AuthServerMissing: 'AuthServerMissing',
  /** OAuthClient: client_id and client_secret generated into its Secret. */
  CredentialsGenerated: 'CredentialsGenerated',
  /** OAuthClient: a new client secret was generated (message says why). */
  SecretRotated: 'SecretRotated',
  /** OAuthClient: the auth server's users Secret is missing, so nobody can sign in yet. */
  UsersSecretMissing: 'UsersSecretMissing',
} as const;
export type EventReason = (typeof EventReasons)[keyof typeof EventReasons];

export interface ReadyState {
  status: 'True' | 'False' | 'Unknown';
  reason: Reason;
  message: string;
}

/** The Ready condition for the new state, keeping lastTransitionTime when the status is unchanged. */
export function readyCondition(
  previous: readonly Condition[] | undefined,
  next: ReadyState,
  generation: number | undefined,
  nowMs: number,
): Condition {
  const old = previous?.find((c) => c.type === CONDITION_READY);
  const lastTransitionTime =
    old !== undefined && old.status === next.status
      ? old.lastTransitionTime
      : new Date(nowMs).toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    type: CONDITION_READY,
    status: next.status,
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    lastTransitionTime,
    reason: next.reason,
    message: next.message,
  };
}

/**
 * The conditions of a live object's status, each parsed with the API's schema (never cast): the
 * status comes from the API server and a hand edit may hold anything; an entry that does not parse
 * is ignored (it only costs a fresh lastTransitionTime).
 */
export function previousConditions(status: unknown): Condition[] {
  const list = asRecord(status)?.['conditions'];
  if (!Array.isArray(list)) return [];
  return list.flatMap((c: unknown) => {
    const parsed = conditionSchema.safeParse(c);
    return parsed.success ? [parsed.data] : [];
  });
}

/** The status both kinds write: observedGeneration and the Ready condition, plus kind-specific fields. */
export function readyStatus(
  raw: KubeObject,
  state: ReadyState,
  nowMs: number,
  fields: Record<string, unknown> = {},
): Record<string, unknown> {
  const generation = raw.metadata.generation;
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions: [readyCondition(previousConditions(raw['status']), state, generation, nowMs)],
    ...fields,
  };
}
