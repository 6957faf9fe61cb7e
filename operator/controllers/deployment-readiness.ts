// What a Deployment's status says about its pods, in words a person can act on.
import { asRecord, type KubeObject } from '../runtime/kube-object.ts';

export interface DeploymentReadiness {
  ready: boolean;
  readyReplicas: number;
  /** Pods of the Deployment, ready or not (its status.replicas). */
  replicas: number;
  message: string;
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

export function deploymentReadiness(
  deployment: KubeObject | undefined,
  wanted: number,
): DeploymentReadiness {
  if (deployment === undefined)
    return {
      ready: false,
      readyReplicas: 0,
      replicas: 0,
      message: 'the Deployment does not exist yet',
    };
  const name = deployment.metadata.name;
  const ns = deployment.metadata.namespace ?? 'default';
  const status = asRecord(deployment['status']) ?? {};
  const readyReplicas = num(status['readyReplicas']);
  const replicas = num(status['replicas']);
  const generation = deployment.metadata.generation ?? 0;
  const observed = num(status['observedGeneration']);
  const hint = `; if this persists, see kubectl -n ${ns} describe deployment ${name} (image pulls, probes, quota)`;
  if (observed < generation) {
    return {
      ready: false,
      readyReplicas,
      replicas,
      message: `waiting for the Deployment controller to pick up the new spec of Deployment ${name} (generation ${generation}, observed ${observed})${hint}`,
    };
  }
  const updated = num(status['updatedReplicas']);
  const available = num(status['availableReplicas']);
  if (updated < wanted) {
    return {
      ready: false,
      readyReplicas,
      replicas,
      message: `rolling out Deployment ${name}: ${updated} of ${wanted} pods updated, ${readyReplicas} ready${hint}`,
    };
  }
  // Pods of the previous template still run (and may be the ready ones): the rollout is not over.
  if (replicas > updated) {
    return {
      ready: false,
      readyReplicas,
      replicas,
      message: `rolling out Deployment ${name}: ${replicas - updated} pods of the previous template still running, ${updated} updated${hint}`,
    };
  }
  if (readyReplicas < wanted || available < wanted) {
    return {
      ready: false,
      readyReplicas,
      replicas,
      message: `waiting for pods of Deployment ${name}: ${readyReplicas} of ${wanted} ready${hint}`,
    };
  }
  return {
    ready: true,
    readyReplicas,
    replicas,
    message: `all ${wanted} pods of Deployment ${name} are ready`,
  };
}
