// The REST KubeClient against a real kube-apiserver, on the same contract the in-memory client
// of the unit tests is held to (test/unit/memory-kube-client-contract.test.ts).
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll } from 'vitest';
import { createHttpKubeClient } from '../../operator/runtime/http-kube-client.ts';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';
import { kubeClientContract } from '../harness/kube-client-contract.ts';

let cluster: Cluster | undefined;
afterAll(async () => {
  await cluster?.stop();
});

kubeClientContract('the REST client on a real API server', async () => {
  cluster = await startCluster();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(cluster.kubeconfigPath);
  return createHttpKubeClient(kubeConfig, { fieldManager: 'kube-client-contract' });
});
