// spec.targetRef routes follow their team Deployment by a watch, not a poll, on a real API server
// with the default resync (10 min): the operator watches Deployments as metadata only, keeps those
// some route targets, and wakes those routes on each change. A route made before its Deployment
// is Ready within seconds of the Deployment's creation, and an edit that takes the sidecar out is
// undone at once. Polled, the first would wait for the next step of the backoff (looks at 0, 5,
// 25 and 65 s: its own status write nudges it once), the second for the resync.
import { describe, expect, it } from 'vitest';
import {
  eventually,
  kget,
  operatorForbidden,
  operatorRequests,
} from '../harness/k8s/operator-env.ts';
import { operatorOnApiServer } from './operator-fixture.ts';

const NS = 'team-w';
/** How long after the route's first reconcile its Deployment is created, ms: past the 25 s look of a poll. */
const LATE_MS = 30_000;
/** What "at once" is allowed, ms (a reconcile, an apply, the test's status patch, another reconcile). */
const PROMPT_MS = 5000;
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const { env } = operatorOnApiServer([NS], 'op-target-watch');

const team = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: ${NS}, labels: { app: web } }
spec:
  replicas: 1
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers: [{ name: app, image: example/web:1.0, ports: [{ name: http, containerPort: 8081 }] }]
`;
const route = `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: web, namespace: ${NS} }
spec:
  targetRef: { name: web, port: 8081 }
  limiter: { replenishRate: 1, burstCapacity: 10 }
`;

async function apply(yaml: string) {
  const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: yaml });
  expect(r.code, r.stderr).toBe(0);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const containers = async () =>
  (
    ((await kget(env.cluster, ['-n', NS, 'deployment', 'web'])) as Obj | undefined)?.['spec'][
      'template'
    ]['spec']['containers'] as Obj[] | undefined
  )?.map((c) => c['name']);
const ready = async () =>
  (
    ((await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'web'])) as Obj | undefined)?.[
      'status'
    ]?.['conditions'] as Obj[] | undefined
  )?.find((c) => c['type'] === 'Ready');

/** Plays the Deployment controller (no kubelet here): every pod of the current generation ready. */
async function rolledOut(): Promise<void> {
  const dep = (await kget(env.cluster, ['-n', NS, 'deployment', 'web'])) as Obj;
  const status = {
    observedGeneration: dep['metadata']['generation'],
    replicas: 1,
    updatedReplicas: 1,
    readyReplicas: 1,
    availableReplicas: 1,
  };
  const r = await env.cluster.kubectl([
    '-n',
    NS,
    'patch',
    'deployment',
    'web',
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
  ]);
  expect(r.code, r.stderr).toBe(0);
}

describe('spec.targetRef follows its Deployment by a watch', () => {
  it(
    `a route made before its Deployment is Ready within ${PROMPT_MS / 1000} s of the Deployment's creation ${LATE_MS / 1000} s later, without looking at it meanwhile`,
    { timeout: 90_000 },
    async () => {
      await apply(route);
      await eventually(
        'TargetRefInvalid',
        async () => (await ready())?.['reason'] === 'TargetRefInvalid',
      );
      const quietFrom = new Date(Date.now() + 2000).toISOString();
      await sleep(LATE_MS);
      const quietUntil = new Date().toISOString();
      const created = performance.now();
      await apply(team);
      await eventually(
        'sidecar injected',
        async () => (await containers())?.includes('portcullis-sidecar') === true,
        PROMPT_MS,
        50,
      );
      await rolledOut();
      await eventually(
        `Ready within ${PROMPT_MS} ms`,
        async () => (await ready())?.['status'] === 'True',
        PROMPT_MS - (performance.now() - created),
        50,
      );
      const readyMs = Math.round(performance.now() - created);
      // Waiting for the Deployment cost no request: nothing announced it, nothing looked.
      const looks = operatorRequests(env, quietFrom, quietUntil).filter(
        (e) => e.objectRef?.resource === 'deployments',
      );
      expect(looks).toEqual([]);
      console.info(
        `target watch: Ready ${readyMs} ms after the Deployment was created (${LATE_MS / 1000} s after the route)`,
      );
    },
  );

  it(
    `an edit that takes the sidecar out is undone within ${PROMPT_MS / 1000} s`,
    { timeout: 30_000 },
    async () => {
      const patch = JSON.stringify([{ op: 'remove', path: '/spec/template/spec/containers/1' }]);
      const before = await containers();
      expect(before).toEqual(['app', 'portcullis-sidecar']);
      const edited = performance.now();
      const r = await env.cluster.kubectl([
        '-n',
        NS,
        'patch',
        'deployment',
        'web',
        '--type=json',
        '-p',
        patch,
      ]);
      expect(r.code, r.stderr).toBe(0);
      await eventually(
        'the sidecar back',
        async () => (await containers())?.includes('portcullis-sidecar') === true,
        PROMPT_MS,
        50,
      );
      console.info(
        `target watch: sidecar back ${Math.round(performance.now() - edited)} ms after the edit`,
      );
    },
  );

  it(
    `the Deployment deleted: the route says so within ${PROMPT_MS / 1000} s`,
    { timeout: 30_000 },
    async () => {
      const r = await env.cluster.kubectl(['-n', NS, 'delete', 'deployment', 'web']);
      expect(r.code, r.stderr).toBe(0);
      await eventually(
        'TargetRefInvalid',
        async () => (await ready())?.['reason'] === 'TargetRefInvalid',
        PROMPT_MS,
        50,
      );
      expect(operatorForbidden(env)).toEqual([]);
    },
  );
});
