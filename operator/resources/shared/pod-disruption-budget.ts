// A PodDisruptionBudget for a Deployment the operator renders with more than one replica.
//
// maxUnavailable 1, not minAvailable 1: a node drain or a cluster upgrade then takes one pod of
// the set at a time whatever the replica count (with minAvailable 1, a 10-replica route could lose
// 9 at once and its remaining pod would take all the traffic), the same one-at-a-time pace as the
// Deployment's own rolls. With one replica no budget is rendered: maxUnavailable 1 would protect
// nothing, and minAvailable 1 would block every drain of that node.
// unhealthyPodEvictionPolicy AlwaysAllow: a pod that is not ready serves nothing, so evicting it
// costs nothing, and a crash-looping pod must not block a drain.
import type { V1PodDisruptionBudget } from '@kubernetes/client-node';
import type { KubeObject, OwnerReference } from '../../runtime/kube-object.ts';

export interface PodDisruptionBudgetInput {
  name: string;
  namespace: string | undefined;
  labels: Record<string, string>;
  selectorLabels: Record<string, string>;
  ownerReferences: OwnerReference[];
}

/** Replicas from which a budget is rendered. */
export const PDB_MIN_REPLICAS = 2;

export function needsPodDisruptionBudget(replicas: number): boolean {
  return replicas >= PDB_MIN_REPLICAS;
}

export function podDisruptionBudget(input: PodDisruptionBudgetInput): KubeObject {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: input.labels,
      ownerReferences: input.ownerReferences,
    },
    spec: {
      maxUnavailable: 1,
      selector: { matchLabels: input.selectorLabels },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  } satisfies V1PodDisruptionBudget;
}
