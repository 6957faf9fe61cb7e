// Deleting a namespace that holds a targetRef route never hangs, with kube-controller-manager's
// namespace controller doing the deletion on a real API server. Under operator.watchNamespaces the
// operator's rights in the namespace come from a RoleBinding there, which the namespace controller
// may delete before the route: before, the operator then got 403 on the route's finalizer and the
// namespace stayed Terminating for good. The RoleBinding is deleted first here, on purpose.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startControllerManager,
  type ControllerManager,
} from '../harness/k8s/controller-manager.ts';
import {
  eventually,
  kget,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';

const NS = 'team-d';
let env: OperatorEnv;
let operator: RunningOperator;
let kcm: ControllerManager;
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

beforeAll(async () => {
  env = await startOperatorEnv([NS], [`operator.watchNamespaces={${NS}}`]);
  operator = await startOperator(env, 'op-ns-deletion', { PORTCULLIS_WATCH_NAMESPACES: NS });
  kcm = startControllerManager(env.cluster, ['namespace']);
}, 120_000);
afterAll(async () => {
  await kcm?.stop();
  await operator?.program.stop();
  await env?.stop();
});

describe('deleting a namespace with a targetRef route', () => {
  it('finishes although the operator RoleBinding went first', async () => {
    const apply = async (yaml: string) => {
      const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: yaml });
      expect(r.code, r.stderr).toBe(0);
    };
    await apply(`apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: ${NS} }
spec:
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec: { containers: [{ name: app, image: example/web:1.0 }] }
`);
    await apply(`apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: all, namespace: ${NS} }
spec:
  targetRef: { name: web, port: 8081 }
  limiter: { replenishRate: 1, burstCapacity: 10 }
`);
    await eventually('the sidecar injected (the route holds its finalizer)', async () => {
      const dep = (await kget(env.cluster, ['-n', NS, 'deployment', 'web'])) as Obj | undefined;
      return ((dep?.['spec']?.['template']?.['spec']?.['containers'] ?? []) as Obj[]).some(
        (c) => c['name'] === 'portcullis-sidecar',
      );
    });
    const unbound = await env.cluster.kubectl([
      '-n',
      NS,
      'delete',
      'rolebinding',
      'portcullis-operator',
    ]);
    expect(unbound.code, unbound.stderr).toBe(0);
    const deleted = await env.cluster.kubectl(['delete', 'namespace', NS, '--wait=false']);
    expect(deleted.code, deleted.stderr).toBe(0);
    await eventually(
      `namespace ${NS} gone`,
      async () => (await kget(env.cluster, ['namespace', NS])) === undefined,
      60_000,
      500,
    ).catch(async (err: unknown) => {
      const route = await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'all']);
      throw new Error(
        `${String(err)}; the route: ${JSON.stringify(route?.['metadata'])}\n${kcm.log()}`,
      );
    });
    expect(operator.program.exited()).toBe(false);
  });
});
