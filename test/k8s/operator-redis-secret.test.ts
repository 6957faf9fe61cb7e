// spec.redis.secretRef on a real API server: the route gets Ready, its Deployment mounts the
// Secret key read-only for the sidecar, and the rendered pod (run as local processes, as in test 7)
// limits in the Redis whose URL, password included, only the Secret holds. A route naming a Secret
// that does not exist still gets its children, with a Warning Event saying what is missing.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { hashBucketKey, keyHashSecretOf } from '../../lib/token-bucket/key-hash.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../harness/ports.ts';
import { startRedis, type RedisServer } from '../harness/redis.ts';
import {
  eventually,
  kget,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';
import { createPodRunner, type PodRunner, type RunningPod } from './pod-runner.ts';

const NS = 'team-s';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

let env: OperatorEnv;
let operator: RunningOperator;
let redisA: RedisServer;
let redisB: RedisServer;
let pods: PodRunner;
let pod: RunningPod;
const ports = { target: 0, sidecar: 0, admin: 0, nowhere: 0 };
const urlA = () => `redis://:secret-a@127.0.0.1:${redisA.port}`;
const urlB = () => `redis://:secret-b@127.0.0.1:${redisB.port}`;

const route = (name: string, secret: string) => `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: ${name}, namespace: ${NS} }
spec:
  target:
    image: portcullis/user-service:test
    command: [node, services/user-service/main.ts]
    port: ${ports.target}
    replicas: 1
    env: [{ name: PORT, value: "${ports.target}" }, { name: HOST, value: 127.0.0.1 }]
  path: /**
  # Cost 5 of 10 at 1 token/s: two requests pass, a third within 5 s is limited; deny, so a
  # request decided anywhere but the Secret's Redis would be a 503.
  limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 5, onStoreError: deny }
  redis: { secretRef: { name: ${secret}, key: redis-url } }
`;

async function apply(yaml: string) {
  const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: yaml });
  expect(r.code, r.stderr).toBe(0);
}
const ready = async (name: string) =>
  (
    ((await kget(env.cluster, ['-n', NS, 'ratelimitroute', name])) as Obj | undefined)?.[
      'status'
    ]?.['conditions'] ?? []
  ).find((c: Obj) => c['type'] === 'Ready');
const events = async (name: string) => {
  const r = await env.cluster.kubectl([
    '-n',
    NS,
    'get',
    'events',
    '--field-selector',
    `involvedObject.name=${name},involvedObject.kind=RateLimitRoute`,
    '-o',
    'json',
  ]);
  return JSON.parse(r.stdout)['items'] as Obj[];
};
const bucketIn = async (url: string, user: string) => {
  const client = new Redis(url);
  try {
    return await client.exists(
      `portcullis:bucket:${NS}:v2:{${hashBucketKey(keyHashSecretOf(decodeURIComponent(new URL(url).password)), `lim:${user}`)}}`,
    );
  } finally {
    client.disconnect();
  }
};
const get = async (user: string) =>
  (
    await fetch(`http://127.0.0.1:${ports.sidecar}/healthcheck/ready`, {
      headers: { 'USER-ID': user },
    })
  ).status;

beforeAll(async () => {
  [redisA, redisB] = await Promise.all([
    startRedis(['--requirepass', 'secret-a']),
    startRedis(['--requirepass', 'secret-b']),
  ]);
  for (const k of Object.keys(ports) as Array<keyof typeof ports>) ports[k] = await freePort();
  env = await startOperatorEnv([NS]);
  pods = createPodRunner(env, NS);
  operator = await startOperator(env, 'op-redis-secret', {
    PORTCULLIS_SIDECAR_PORT: String(ports.sidecar),
    PORTCULLIS_SIDECAR_ADMIN_PORT: String(ports.admin),
    // A default nobody listens on: the route's secretRef must win over it.
    PORTCULLIS_DEFAULT_REDIS_URL: `redis://127.0.0.1:${ports.nowhere}`,
  });
  await apply(`apiVersion: v1
kind: Secret
metadata: { name: redis-credentials, namespace: ${NS} }
stringData: { redis-url: "${urlA()}" }
---
${route('lim', 'redis-credentials')}`);
});

afterAll(async () => {
  await pods?.stop();
  await operator?.program.stop();
  await env?.stop();
  await Promise.all([redisA?.stop(), redisB?.stop()]);
});

describe('RateLimitRoute with spec.redis.secretRef', () => {
  it('gets Ready; the Deployment mounts the Secret key read-only for the sidecar only', async () => {
    const dep = (await eventually('deployment', () =>
      kget(env.cluster, ['-n', NS, 'deployment', 'lim']),
    )) as Obj;
    const spec = dep['spec']['template']['spec'];
    expect(spec['volumes']).toContainEqual(
      expect.objectContaining({
        name: 'redis-url',
        secret: expect.objectContaining({
          secretName: 'redis-credentials',
          items: [{ key: 'redis-url', path: 'url' }],
        }),
      }),
    );
    const sidecar = spec['containers'].find((c: Obj) => c['name'] === 'sidecar');
    expect(sidecar['volumeMounts']).toContainEqual({
      name: 'redis-url',
      mountPath: '/etc/portcullis/redis',
      readOnly: true,
    });
    expect(
      spec['containers']
        .find((c: Obj) => c['name'] === 'target')
        ['volumeMounts'].map((m: Obj) => m['name']),
    ).not.toContain('redis-url');
    const cm = (await kget(env.cluster, ['-n', NS, 'configmap', 'lim-sidecar'])) as Obj;
    expect(cm['data']['config.yaml']).toContain('urlFile: /etc/portcullis/redis/url');
    expect(cm['data']['config.yaml']).not.toContain('secret-a'); // the password stays in the Secret

    expect(
      (
        await eventually('Progressing', async () =>
          (await ready('lim'))?.['reason'] === 'Progressing' ? ready('lim') : undefined,
        )
      )['status'],
    ).toBe('False');
    // Plays the Deployment controller (no kube-controller-manager here): the pod is ready.
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
      'lim',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status }),
    ]);
    expect(r.code, r.stderr).toBe(0);
    await eventually('Ready', async () => (await ready('lim'))?.['status'] === 'True');
    expect((await events('lim')).filter((e) => e['type'] === 'Warning')).toEqual([]);
  });

  it('the rendered pod runs and limits in the Redis the Secret names, password included', async () => {
    pod = await pods.runPod('lim');
    await eventually(
      'sidecar ready',
      async () => (await fetch(`http://127.0.0.1:${ports.admin}/readyz`)).status === 200,
    );
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push(await get('alice'));
    expect(statuses).toEqual([200, 200, 429]);
    expect(await bucketIn(urlA(), 'alice')).toBe(1);
  });

  it('a rotated Secret, projected into the volume as the kubelet does, moves the sidecar to the new Redis', async () => {
    const r = await env.cluster.kubectl([
      '-n',
      NS,
      'patch',
      'secret',
      'redis-credentials',
      '--type=merge',
      '-p',
      JSON.stringify({ stringData: { 'redis-url': urlB() } }),
    ]);
    expect(r.code, r.stderr).toBe(0);
    const secret = (await kget(env.cluster, ['-n', NS, 'secret', 'redis-credentials'])) as Obj;
    const dir = pod.volumeDirs.get('/etc/portcullis/redis') ?? '';
    writeFileSync(
      path.join(dir, 'url'),
      Buffer.from(secret['data']['redis-url'], 'base64').toString('utf8'),
    );
    const sidecar = pod.programs.find((p) => p.name.endsWith('-sidecar'));
    await sidecar?.waitForLine(/store settings changed/, 15_000);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push(await get('alice'));
    expect(statuses).toEqual([200, 200, 429]); // a fresh bucket: in B, not A
    expect(await bucketIn(urlB(), 'alice')).toBe(1);
  });

  it('a route naming a missing Secret gets its children (not InvalidSpec) and a Warning Event', async () => {
    await apply(route('nosecret', 'does-not-exist'));
    await eventually('deployment', () => kget(env.cluster, ['-n', NS, 'deployment', 'nosecret']));
    const c = await eventually('status', () => ready('nosecret'));
    expect(c['reason']).toBe('Progressing');
    const warning = await eventually('warning', async () =>
      (await events('nosecret')).find((e) => e['reason'] === 'RedisSecretMissing'),
    );
    expect(warning['type']).toBe('Warning');
    expect(warning['message']).toMatch(/Secret does-not-exist does not exist/);
  });
});
