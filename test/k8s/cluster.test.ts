// Smoke test of the harness: a real kube-apiserver + etcd answers as admin and as a ServiceAccount
// (bound token, RBAC enforced), and survives restarts of either process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

describe('the k8s test cluster', () => {
  it('lists the built-in namespaces and creates a ConfigMap as admin', async () => {
    const ns = await cluster.kubectl(['get', 'namespaces', '-o', 'name']);
    expect(ns.code, ns.stderr).toBe(0);
    expect(ns.stdout).toContain('namespace/default');
    expect(ns.stdout).toContain('namespace/kube-system');

    const created = await cluster.kubectl(['create', 'configmap', 'smoke', '--from-literal=a=1']);
    expect(created.code, created.stderr).toBe(0);
    const got = await cluster.kubectl(['get', 'configmap', 'smoke', '-o', 'jsonpath={.data.a}']);
    expect(got.stdout).toBe('1');
  });

  it('runs the kube-apiserver version the tools were built for', async () => {
    const res = await cluster.request('GET', '/version');
    expect((res.body as { gitVersion: string }).gitVersion).toBe(cluster.tools.kubernetesVersion);
  });

  it('authenticates a ServiceAccount with a bound token and enforces RBAC on it', async () => {
    const setup = await cluster.kubectl(['create', 'serviceaccount', 'reader']);
    expect(setup.code, setup.stderr).toBe(0);
    const kubeconfig = await cluster.kubeconfigFor({ namespace: 'default', name: 'reader' });

    const denied = await cluster.kubectl(['get', 'configmaps'], { kubeconfig });
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain('system:serviceaccount:default:reader');
    expect(denied.stderr).toMatch(/forbidden/i);

    await cluster.kubectl([
      'create',
      'role',
      'cm-reader',
      '--verb=get,list',
      '--resource=configmaps',
    ]);
    await cluster.kubectl([
      'create',
      'rolebinding',
      'reader',
      '--role=cm-reader',
      '--serviceaccount=default:reader',
    ]);
    const allowed = await cluster.kubectl(['get', 'configmap', 'smoke', '-o', 'name'], {
      kubeconfig,
    });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stdout.trim()).toBe('configmap/smoke');
    const write = await cluster.kubectl(['create', 'configmap', 'nope'], { kubeconfig });
    expect(write.code).not.toBe(0);
  });

  it('keeps its data across a restart of etcd and of the API server', async () => {
    await cluster.restartEtcd();
    await cluster.restartApiServer();
    const got = await cluster.kubectl(['get', 'configmap', 'smoke', '-o', 'jsonpath={.data.a}']);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toBe('1');
  });
});
