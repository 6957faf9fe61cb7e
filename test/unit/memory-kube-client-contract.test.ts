// The in-memory KubeClient held to the contract the REST client passes against a real API server
// (test/k8s/kube-client-contract.test.ts).
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { kubeClientContract } from '../harness/kube-client-contract.ts';

kubeClientContract('the in-memory client', async () => new MemoryKubeClient());
