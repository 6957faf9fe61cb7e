// Where the operator's pods may run: spread over hosts and zones, and their priority.
//
// ScheduleAnyway: a spread is a preference, never a reason to leave a pod Pending (a one-node or
// one-zone cluster still runs every replica). matchLabelKeys pod-template-hash counts only the
// pods of the same ReplicaSet, so a roll spreads the new pods instead of balancing against old
// ones about to go.
import type { V1TopologySpreadConstraint } from '@kubernetes/client-node';

export const HOSTNAME_TOPOLOGY_KEY = 'kubernetes.io/hostname';
export const ZONE_TOPOLOGY_KEY = 'topology.kubernetes.io/zone';

export function topologySpreadConstraints(
  selectorLabels: Record<string, string>,
): V1TopologySpreadConstraint[] {
  return [HOSTNAME_TOPOLOGY_KEY, ZONE_TOPOLOGY_KEY].map((topologyKey) => ({
    maxSkew: 1,
    topologyKey,
    whenUnsatisfiable: 'ScheduleAnyway',
    labelSelector: { matchLabels: selectorLabels },
    matchLabelKeys: ['pod-template-hash'],
  }));
}

/** `priorityClassName` of a pod spec, or nothing when neither the object nor the operator names one. */
export function priorityClassField(
  own: string | undefined,
  operatorDefault: string | undefined,
): { priorityClassName?: string } {
  const name = own ?? operatorDefault;
  return name === undefined ? {} : { priorityClassName: name };
}
