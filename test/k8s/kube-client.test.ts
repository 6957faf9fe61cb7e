// The operator's REST client against a real API server: how it reads the API server's refusals.
// A write into a namespace being deleted must be recognised as such (the operator then ends the
// reconcile quietly), which depends on the exact shape of the Status the API server sends.
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNamespaceTerminating, KubeApiError } from '../../operator/runtime/errors.ts';
import { createHttpKubeClient } from '../../operator/runtime/http-kube-client.ts';
import type { KubeClient } from '../../operator/runtime/kube-client.ts';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';

let cluster: Cluster;
let client: KubeClient;
beforeAll(async () => {
  cluster = await startCluster();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(cluster.kubeconfigPath);
  client = createHttpKubeClient(kubeConfig, { fieldManager: 'kube-client-test' });
});
afterAll(async () => {
  await cluster?.stop();
});

describe('the operator REST client on a real API server', () => {
  it('a create, an apply and an event into a namespace being deleted are refused as NamespaceTerminating', async () => {
    // No namespace controller runs here, so a deleted namespace holding a ConfigMap stays Terminating.
    for (const args of [
      ['create', 'namespace', 'doomed'],
      ['create', 'configmap', 'keep', '-n', 'doomed'],
      ['delete', 'namespace', 'doomed', '--wait=false'],
    ]) {
      const r = await cluster.kubectl(args);
      expect(r.code, r.stderr).toBe(0);
    }
    const configMap = (name: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'doomed' },
      data: { a: '1' },
    });
    const event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'route.1', namespace: 'doomed' },
      involvedObject: { kind: 'ConfigMap', name: 'keep', namespace: 'doomed' },
      reason: 'Applied',
      message: 'm',
      type: 'Normal',
    };
    const refusals = await Promise.all(
      [
        client.create(configMap('created')),
        client.apply(configMap('applied')),
        client.create(event),
      ].map((p) =>
        p.then(
          () => undefined,
          (err: unknown) => err,
        ),
      ),
    );
    for (const err of refusals) {
      expect(err).toBeInstanceOf(KubeApiError);
      expect(err).toMatchObject({ status: 403, causes: ['NamespaceTerminating'] });
      expect(isNamespaceTerminating(err)).toBe(true);
    }
  });

  it('any other refusal is not taken for a namespace being deleted', async () => {
    const err = await client
      .create({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'Not_A_Name', namespace: 'default' },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ status: 422 });
    expect(isNamespaceTerminating(err)).toBe(false);
  });
});
