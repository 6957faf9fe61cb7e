// Redis passwords only in Secrets, on a real API server. The chart: its bundled Redis password (and
// a redis.url carrying one, which it refuses) appears in no rendered object but the generated
// Secret. The operator, installed with redis.existingSecret and auth.redis.existingSecret and given
// exactly the settings the chart renders: every ConfigMap and every container env value in the
// cluster is free of the two passwords, the route's sidecar reaches its Redis through the copy
// mounted as redis.urlFile, and the auth server through REDIS_URL from a secretKeyRef (both run as
// local processes against redis-servers that require the passwords).
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { hashBucketKey, keyHashSecretOf } from '../../lib/token-bucket/key-hash.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { hashPassword } from '../../lib/config/auth-server.ts';
import { freePort, waitForPort } from '../harness/ports.ts';
import { startRedis, type RedisServer } from '../harness/redis.ts';
import { authorize } from '../harness/auth-flow.ts';
import {
  eventually,
  kget,
  RELEASE,
  RELEASE_NS,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';
import { createPodRunner, type PodRunner } from './pod-runner.ts';

const NS = 'team-c';
const LIMITER_PASSWORD = 'limiter-Hq4u8Zr2Wc6Tn0Lp';
const AUTH_PASSWORD = 'auth-Bx3k9Vm1Qd7Ys5Fe';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions
type Doc = {
  kind?: string;
  metadata?: { name?: string };
  data?: Record<string, string>;
  spec?: Obj;
} | null;

let env: OperatorEnv;
let operator: RunningOperator;
let limiterRedis: RedisServer;
let authRedis: RedisServer;
let pods: PodRunner;
const ports = { target: 0, sidecar: 0, admin: 0, auth: 0 };
const decode = (s: string) => Buffer.from(s, 'base64').toString('utf8');

const chart = (args: string[]) =>
  env.cluster.helm([
    'template',
    RELEASE,
    'charts/portcullis',
    '--namespace',
    RELEASE_NS,
    '--kube-version',
    env.cluster.tools.kubernetesVersion,
    ...args,
  ]);
const docsOf = (yaml: string) =>
  parseAllDocuments(yaml)
    .map((d) => d.toJS() as Doc)
    .filter((d): d is NonNullable<Doc> => d !== null);

/** Every container (and init container) of every pod template among the objects. */
function containersOf(objects: readonly Obj[]): Obj[] {
  return objects.flatMap((o) => {
    const pod = o['spec']?.['template']?.['spec'];
    return pod === undefined
      ? []
      : [...(pod['containers'] ?? []), ...(pod['initContainers'] ?? [])];
  });
}
const envValues = (objects: readonly Obj[]) =>
  containersOf(objects).flatMap((c) =>
    ((c['env'] ?? []) as Obj[]).flatMap((e) =>
      typeof e['value'] === 'string' ? [String(e['value'])] : [],
    ),
  );

const EXISTING = [
  '--set',
  'redis.enabled=false',
  '--set',
  'redis.existingSecret.name=redis-credentials',
  '--set',
  'auth.redis.existingSecret.name=redis-credentials',
  '--set',
  'auth.redis.existingSecret.key=auth-redis-url',
];

beforeAll(async () => {
  [limiterRedis, authRedis] = await Promise.all([
    startRedis(['--requirepass', LIMITER_PASSWORD], { password: LIMITER_PASSWORD }),
    startRedis(['--requirepass', AUTH_PASSWORD], { password: AUTH_PASSWORD }),
  ]);
  for (const k of Object.keys(ports) as Array<keyof typeof ports>) ports[k] = await freePort();
  env = await startOperatorEnv([NS]);
  pods = createPodRunner(env, NS);
  // The chart with both existingSecrets (adds the Role that reads them), and the Secret they name.
  const rendered = await chart(EXISTING);
  expect(rendered.code, rendered.stderr).toBe(0);
  const applied = await env.cluster.kubectl(['apply', '--server-side', '-f', '-'], {
    input: rendered.stdout,
  });
  expect(applied.code, applied.stderr).toBe(0);
  const users = {
    users: [
      {
        username: 'alice',
        password_hash: await hashPassword('wonderland'),
        profile: { name: 'Alice' },
      },
    ],
  };
  const manifests = `apiVersion: v1
kind: Secret
metadata: { name: redis-credentials, namespace: ${RELEASE_NS} }
stringData:
  redis-url: "${limiterRedis.url}"
  auth-redis-url: "${authRedis.url}"
---
apiVersion: v1
kind: Secret
metadata: { name: portcullis-auth-users, namespace: ${NS} }
stringData:
  users.json: '${JSON.stringify(users)}'
---
apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: lim, namespace: ${NS} }
spec:
  target:
    image: portcullis/user-service:test
    command: [node, services/user-service/main.ts]
    port: ${ports.target}
    replicas: 1
    env: [{ name: PORT, value: "${ports.target}" }, { name: HOST, value: 127.0.0.1 }]
  path: /**
  # deny: a request decided anywhere but the Secret's Redis would be a 503.
  limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 5, onStoreError: deny }
---
apiVersion: portcullis.dev/v1alpha1
kind: OAuthClient
metadata: { name: demo-app, namespace: ${NS} }
spec:
  displayName: Demo App
  redirectUris: [http://127.0.0.1:3000/callback]
  scopes: [profile]
  tokenEndpointAuthMethod: client_secret_post
`;
  const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: manifests });
  expect(r.code, r.stderr).toBe(0);
  // The Redis settings exactly as the chart renders them for the operator.
  const deployment = docsOf(rendered.stdout).find(
    (d) => d.kind === 'Deployment' && d.metadata?.name === `${RELEASE}-operator`,
  );
  const chartEnv: Obj[] = deployment?.spec?.['template']['spec']['containers'][0]['env'] ?? [];
  const redisSettings = Object.fromEntries(
    chartEnv
      .filter((e) => /^PORTCULLIS_.*REDIS/.test(String(e['name'])))
      .map((e) => [String(e['name']), String(e['value'])]),
  );
  expect(redisSettings).toEqual({
    PORTCULLIS_DEFAULT_REDIS_URL: '',
    PORTCULLIS_AUTH_REDIS_URL: '',
    PORTCULLIS_DEFAULT_REDIS_SECRET: 'redis-credentials/redis-url',
    PORTCULLIS_AUTH_REDIS_SECRET: 'redis-credentials/auth-redis-url',
    PORTCULLIS_REDIS_TENANT_USERS: 'true',
  });
  operator = await startOperator(env, 'op-redis-credentials', {
    ...redisSettings,
    PORTCULLIS_SIDECAR_PORT: String(ports.sidecar),
    PORTCULLIS_SIDECAR_ADMIN_PORT: String(ports.admin),
    PORTCULLIS_AUTH_SERVER_PORT: String(ports.auth),
    PORTCULLIS_ISSUER_URL: `http://127.0.0.1:${ports.auth}`,
  });
  await eventually('the route copy', () => kget(env.cluster, ['-n', NS, 'secret', 'lim-redis']));
  await eventually('the auth copy', () =>
    kget(env.cluster, ['-n', NS, 'secret', 'portcullis-auth-redis']),
  );
  await eventually('route Deployment', () => kget(env.cluster, ['-n', NS, 'deployment', 'lim']));
  await eventually('auth Deployment', () =>
    kget(env.cluster, ['-n', NS, 'deployment', 'portcullis-auth-server']),
  );
}, 120_000);

afterAll(async () => {
  await pods?.stop();
  await operator?.program.stop();
  await env?.stop();
  await limiterRedis?.stop();
  await authRedis?.stop();
});

describe('the chart', () => {
  it('puts the bundled Redis passwords in its generated Secret only, never in a ConfigMap, an env value or any other object', async () => {
    const res = await chart([]);
    expect(res.code, res.stderr).toBe(0);
    const docs = docsOf(res.stdout);
    const secret = docs.find(
      (d) => d.kind === 'Secret' && d.metadata?.name === `${RELEASE}-redis-credentials`,
    );
    const passwords = ['redis-password', 'auth-redis-password'].map((k) =>
      decode(secret?.data?.[k] ?? ''),
    );
    for (const p of passwords) expect(p).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(decode(secret?.data?.['redis-url'] ?? '')).toBe(
      `redis://:${passwords[0]}@${RELEASE}-redis.${RELEASE_NS}.svc:6379`,
    );
    const others = docs.filter((d) => d !== secret);
    for (const p of passwords) {
      for (const d of others) expect(JSON.stringify(d)).not.toContain(p);
      for (const v of envValues(others as Obj[])) expect(v).not.toContain(p);
    }
    // Each bundled Redis takes its password from the Secret through the env, expanded into its args.
    for (const component of ['redis', 'auth-redis']) {
      const [container] = containersOf(
        docs.filter(
          (d) => d.kind === 'Deployment' && d.metadata?.name === `${RELEASE}-${component}`,
        ) as Obj[],
      );
      expect(container?.['args']).toEqual(
        expect.arrayContaining(['--requirepass', '$(REDIS_PASSWORD)']),
      );
      expect(container?.['env']).toEqual([
        {
          name: 'REDIS_PASSWORD',
          valueFrom: {
            secretKeyRef: { name: `${RELEASE}-redis-credentials`, key: `${component}-password` },
          },
        },
      ]);
    }
    expect(secret?.['metadata' as keyof typeof secret]).toMatchObject({
      annotations: { 'helm.sh/resource-policy': 'keep' },
    });
  });

  it('rolls each bundled Redis with a new password: its pod template carries a checksum of the one in the Secret, new on every helm template', async () => {
    // helm template has no cluster to look the existing Secret up in (as under Argo CD): new passwords every render.
    const renders = await Promise.all([chart([]), chart([])]);
    const checksums = renders.map((res) => {
      expect(res.code, res.stderr).toBe(0);
      const docs = docsOf(res.stdout);
      const secret = docs.find(
        (d) => d.kind === 'Secret' && d.metadata?.name === `${RELEASE}-redis-credentials`,
      );
      return ['redis', 'auth-redis'].map((component) => {
        const dep = docs.find(
          (d) => d.kind === 'Deployment' && d.metadata?.name === `${RELEASE}-${component}`,
        );
        const checksum =
          dep?.spec?.['template']['metadata']['annotations']['checksum/redis-password'];
        expect(checksum).toBe(
          createHash('sha256')
            .update(decode(secret?.data?.[`${component}-password`] ?? ''))
            .digest('hex'),
        );
        return checksum as string;
      });
    });
    expect(checksums[0]?.[0]).not.toBe(checksums[1]?.[0]);
    expect(checksums[0]?.[1]).not.toBe(checksums[1]?.[1]);
  });

  it('with existingSecrets renders no Redis URL anywhere, and applies with a server-side dry run', async () => {
    const res = await chart(EXISTING);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).not.toMatch(/rediss?:\/\//);
    const dry = await env.cluster.kubectl(
      ['apply', '--server-side', '--dry-run=server', '-f', '-'],
      { input: res.stdout },
    );
    expect(dry.code, dry.stderr).toBe(0);
  });

  it('refuses a redis.url or auth.redis.url with a password, pointing at existingSecret', async () => {
    const plain = await chart([
      '--set',
      `redis.url=redis://:${LIMITER_PASSWORD}@redis.example:6379`,
    ]);
    expect(plain.code).not.toBe(0);
    expect(plain.stderr).toContain('redis.url holds credentials');
    expect(plain.stderr).toContain('redis.existingSecret');
    const auth = await chart([
      '--set',
      `auth.redis.url=rediss://default:${AUTH_PASSWORD}@auth.example:6380`,
    ]);
    expect(auth.code).not.toBe(0);
    expect(auth.stderr).toContain('auth.redis.url holds credentials');
    expect(auth.stderr).toContain('auth.redis.existingSecret');
    const noPassword = await chart(['--set', 'redis.url=redis://redis.example:6379']);
    expect(noPassword.code, noPassword.stderr).toBe(0);
  });
});

describe('what the operator renders', () => {
  it('holds neither password in any ConfigMap or container env value in the cluster', async () => {
    const all = async (kind: string) =>
      JSON.parse((await env.cluster.kubectl(['get', kind, '-A', '-o', 'json'])).stdout)[
        'items'
      ] as Obj[];
    const configMaps = await all('configmaps');
    expect(
      configMaps.map((c) => `${c['metadata']['namespace']}/${c['metadata']['name']}`),
    ).toContain(`${NS}/lim-sidecar`);
    const workloads = [
      ...(await all('deployments')),
      ...(await all('statefulsets')),
      ...(await all('daemonsets')),
    ];
    expect(workloads.map((d) => d['metadata']['name'])).toEqual(
      expect.arrayContaining(['lim', 'portcullis-auth-server']),
    );
    for (const password of [LIMITER_PASSWORD, AUTH_PASSWORD]) {
      for (const c of configMaps) expect(JSON.stringify(c)).not.toContain(password);
      for (const v of envValues(workloads)) expect(v).not.toContain(password);
      for (const d of workloads) expect(JSON.stringify(d)).not.toContain(password);
    }
    const authEnv: Obj[] =
      containersOf(
        workloads.filter((d) => d['metadata']['name'] === 'portcullis-auth-server'),
      )[0]?.['env'] ?? [];
    expect(authEnv.find((e) => e['name'] === 'REDIS_URL')).toEqual({
      name: 'REDIS_URL',
      valueFrom: { secretKeyRef: { name: 'portcullis-auth-redis', key: 'url' } },
    });
  });

  it("the route's Secret is owned by the route, names its namespace's own Redis user, and its sidecar limits in the password-protected Redis", async () => {
    const copy = (await kget(env.cluster, ['-n', NS, 'secret', 'lim-redis'])) as Obj;
    const url = new URL(decode(copy['data']['url']));
    expect(`${url.host}${decodeURIComponent(url.username)}`).toBe(
      `127.0.0.1:${limiterRedis.port}portcullis-bucket-${NS}`,
    );
    expect(decode(copy['data']['url'])).not.toContain(LIMITER_PASSWORD);
    expect(copy['metadata']['ownerReferences']).toEqual([
      expect.objectContaining({ kind: 'RateLimitRoute', name: 'lim', controller: true }),
    ]);
    await pods.runPod('lim');
    await eventually(
      'sidecar ready',
      async () => (await fetch(`http://127.0.0.1:${ports.admin}/readyz`)).status === 200,
    );
    const get = async () =>
      (
        await fetch(`http://127.0.0.1:${ports.sidecar}/healthcheck/ready`, {
          headers: { 'USER-ID': 'u1' },
        })
      ).status;
    expect([await get(), await get(), await get()]).toEqual([200, 200, 429]);
    const admin = new Redis(limiterRedis.url);
    try {
      // Under the namespace's prefix, the user id hashed with a secret from the namespace's own password.
      expect(
        await admin.exists(
          `portcullis:bucket:${NS}:v2:{${hashBucketKey(keyHashSecretOf(decodeURIComponent(url.password)), 'lim:u1')}}`,
        ),
      ).toBe(1);
    } finally {
      admin.disconnect();
    }
  });

  it('the auth server signs in with its state in the password-protected auth Redis (REDIS_URL from the secretKeyRef)', async () => {
    await pods.runPod('portcullis-auth-server');
    await waitForPort(ports.auth);
    const secret = (await kget(env.cluster, ['-n', NS, 'secret', 'demo-app-oauth-client'])) as Obj;
    await eventually(
      'registered',
      async () =>
        ((await kget(env.cluster, ['-n', NS, 'oauthclient', 'demo-app'])) as Obj)['status']?.[
          'conditions'
        ]?.[0]?.['reason'] === 'Registered',
    );
    const { location } = await authorize({
      issuer: `http://127.0.0.1:${ports.auth}`,
      clientId: decode(secret['data']['client_id']),
      redirectUri: 'http://127.0.0.1:3000/callback',
      scope: 'profile',
    });
    expect(location.searchParams.get('code')).toBeTruthy();
    const admin = new Redis(authRedis.url);
    try {
      expect(await admin.dbsize()).toBeGreaterThan(0);
    } finally {
      admin.disconnect();
    }
  });
});
