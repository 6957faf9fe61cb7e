// On a real API server: a tenant floods its namespace with large Secrets and ConfigMaps carrying
// the operator's managed-by label (anyone can set a label). The operator, with a small V8 heap,
// still syncs its caches and reconciles another team's route: its caches hold Secrets and
// ConfigMaps as metadata only, and only objects a Portcullis object owns. Before, the initial list
// of the flood alone did not fit the heap and the operator crash-looped for every namespace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  kget,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';

const FLOOD_NS = 'team-b';
const NS = 'team-a';
/** Each flood object's payload, bytes (a Secret's is base64-encoded on the wire: 4/3 of it). */
const PAYLOAD = 700 * 1024;
const SECRETS = 24;
const CONFIG_MAPS = 24;
/** V8 old space of the operator in this test, MiB: the flood is ~40 MB on the wire. */
const HEAP_MIB = 48;

let env: OperatorEnv;
let operator: RunningOperator;
const managed = { 'app.kubernetes.io/managed-by': 'portcullis-operator' };

beforeAll(async () => {
  env = await startOperatorEnv([FLOOD_NS, NS]);
  const payload = 'x'.repeat(PAYLOAD);
  for (let i = 0; i < SECRETS; i++) {
    const r = await env.cluster.request('POST', `/api/v1/namespaces/${FLOOD_NS}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `flood-${i}`, labels: managed },
      data: { blob: Buffer.from(payload).toString('base64') },
    });
    expect(r.status).toBe(201);
  }
  for (let i = 0; i < CONFIG_MAPS; i++) {
    const r = await env.cluster.request('POST', `/api/v1/namespaces/${FLOOD_NS}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `flood-${i}`, labels: managed },
      data: { blob: payload },
    });
    expect(r.status).toBe(201);
  }
  operator = await startOperator(env, 'op-cache', {
    NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}`,
  });
}, 180_000);
afterAll(async () => {
  await operator?.program.stop();
  await env?.stop();
});

describe('operator: a flood of labelled Secrets and ConfigMaps', () => {
  it(`with ${SECRETS} Secrets and ${CONFIG_MAPS} ConfigMaps of ${PAYLOAD / 1024} KiB in another namespace, a ${HEAP_MIB} MiB heap syncs and reconciles a new route`, async () => {
    await eventually(
      'operator ready',
      async () => !operator.program.exited() && (await operator.readyz()).startsWith('ok'),
      60_000,
    );
    const r = await env.cluster.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: web, namespace: ${NS} }
spec:
  target: { image: portcullis/user-service:test, port: 8081, replicas: 1 }
  limiter: { replenishRate: 1, burstCapacity: 10 }
`,
    });
    expect(r.code, r.stderr).toBe(0);
    await eventually(
      'the route Deployment and its config',
      async () =>
        (await kget(env.cluster, ['-n', NS, 'deployment', 'web'])) !== undefined &&
        (await kget(env.cluster, ['-n', NS, 'configmap', 'web-sidecar'])) !== undefined,
      60_000,
    );
    expect(operator.program.exited()).toBe(false);
    // The flood is left as it was: the operator never writes what it does not own.
    const flood = (await kget(env.cluster, ['-n', FLOOD_NS, 'secret', 'flood-0'])) as {
      metadata: { ownerReferences?: unknown };
    };
    expect(flood.metadata.ownerReferences).toBeUndefined();
  });
});
