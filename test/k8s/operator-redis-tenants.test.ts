// Two teams' namespaces (team-a, team-b) on one operator, one limiter Redis and one auth Redis, on a
// real API server and real redis-servers with ACLs. Each team has a route named `api` and an
// OAuthClient. What a team can read in its namespace (its Redis Secrets) names its own Redis user,
// never the admin password, and that user reaches none of the other team's keys nor the server's
// admin commands; same-named routes keep separate buckets; the last route or client of a
// namespace takes its Redis user with it.
import { Redis } from 'ioredis';
import { hashBucketKey, keyHashSecretOf } from '../../lib/token-bucket/key-hash.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../harness/ports.ts';
import { startRedis, type RedisServer } from '../harness/redis.ts';
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
import { createPodRunner } from './pod-runner.ts';

const TEAMS = ['team-a', 'team-b'] as const;
const LIMITER_PASSWORD = 'limiter-Zt6n1Qw9Hd3Ls7Vb';
const AUTH_PASSWORD = 'auth-Mv2c8Rk4Yp0Gx5Nj';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

let env: OperatorEnv;
let operator: RunningOperator;
let limiterRedis: RedisServer;
let authRedis: RedisServer;
const ports = { target: 0, sidecar: 0, admin: 0, auth: 0 };
const redisClients: Redis[] = [];
const decode = (s: string) => Buffer.from(s, 'base64').toString('utf8');
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

/** A client as a team would make one from the URL in its namespace's Secret. */
async function teamClient(team: string, secret: string): Promise<{ url: string; client: Redis }> {
  const obj = (await kget(env.cluster, ['-n', team, 'secret', secret])) as Obj;
  const url = decode(obj['data']['url']);
  const client = new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  redisClients.push(client);
  return { url, client };
}
const admin = (server: RedisServer) => {
  const c = new Redis(server.url);
  redisClients.push(c);
  return c;
};
const aclUsers = async (server: RedisServer) =>
  ((await admin(server).call('ACL', 'USERS')) as string[]).sort();

const manifests = (team: string) => `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: api, namespace: ${team} }
spec:
  target:
    image: portcullis/user-service:test
    command: [node, services/user-service/main.ts]
    port: ${ports.target}
    replicas: 1
    env: [{ name: PORT, value: "${ports.target}" }, { name: HOST, value: 127.0.0.1 }]
  path: /**
  limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 5, onStoreError: deny }
---
apiVersion: portcullis.dev/v1alpha1
kind: OAuthClient
metadata: { name: app, namespace: ${team} }
spec:
  displayName: App
  redirectUris: [http://127.0.0.1:3000/callback]
  scopes: [profile]
  tokenEndpointAuthMethod: client_secret_post
`;

beforeAll(async () => {
  [limiterRedis, authRedis] = await Promise.all([
    startRedis(['--requirepass', LIMITER_PASSWORD], { password: LIMITER_PASSWORD }),
    startRedis(['--requirepass', AUTH_PASSWORD], { password: AUTH_PASSWORD }),
  ]);
  for (const k of Object.keys(ports) as Array<keyof typeof ports>) ports[k] = await freePort();
  env = await startOperatorEnv([...TEAMS]);
  // The chart with both existingSecrets: the Role that lets the operator read them.
  const rendered = await env.cluster.helm([
    'template',
    RELEASE,
    'charts/portcullis',
    '--namespace',
    RELEASE_NS,
    '--kube-version',
    env.cluster.tools.kubernetesVersion,
    ...EXISTING,
  ]);
  expect(rendered.code, rendered.stderr).toBe(0);
  const chart = await env.cluster.kubectl(['apply', '--server-side', '-f', '-'], {
    input: rendered.stdout,
  });
  expect(chart.code, chart.stderr).toBe(0);
  const secret = `apiVersion: v1
kind: Secret
metadata: { name: redis-credentials, namespace: ${RELEASE_NS} }
stringData:
  redis-url: "${limiterRedis.url}"
  auth-redis-url: "${authRedis.url}"
`;
  const r = await env.cluster.kubectl(['apply', '-f', '-'], {
    input: [secret, ...TEAMS.map(manifests)].join('---\n'),
  });
  expect(r.code, r.stderr).toBe(0);
  operator = await startOperator(env, 'op-redis-tenants', {
    PORTCULLIS_DEFAULT_REDIS_SECRET: 'redis-credentials/redis-url',
    PORTCULLIS_AUTH_REDIS_SECRET: 'redis-credentials/auth-redis-url',
    PORTCULLIS_SIDECAR_PORT: String(ports.sidecar),
    PORTCULLIS_SIDECAR_ADMIN_PORT: String(ports.admin),
    PORTCULLIS_AUTH_SERVER_PORT: String(ports.auth),
  });
  for (const team of TEAMS) {
    await eventually(`${team} route Secret`, () =>
      kget(env.cluster, ['-n', team, 'secret', 'api-redis']),
    );
    await eventually(`${team} auth Secret`, () =>
      kget(env.cluster, ['-n', team, 'secret', 'portcullis-auth-redis']),
    );
    await eventually(`${team} route Deployment`, () =>
      kget(env.cluster, ['-n', team, 'deployment', 'api']),
    );
  }
}, 120_000);

afterAll(async () => {
  for (const c of redisClients) c.disconnect();
  await operator?.program.stop();
  await env?.stop();
  await limiterRedis?.stop();
  await authRedis?.stop();
});

describe('two namespaces sharing the Redis instances', () => {
  it("each namespace's Secrets name its own Redis user, never an admin password", async () => {
    for (const team of TEAMS) {
      for (const [secret, server, password, purpose] of [
        ['api-redis', limiterRedis, LIMITER_PASSWORD, 'bucket'],
        ['portcullis-auth-redis', authRedis, AUTH_PASSWORD, 'auth'],
      ] as const) {
        const { url, client } = await teamClient(team, secret);
        expect(url).not.toContain(password);
        expect(decodeURIComponent(new URL(url).username)).toBe(`portcullis-${purpose}-${team}`);
        expect(new URL(url).port).toBe(String(server.port));
        expect(await client.ping()).toBe('PONG');
      }
    }
    expect(await aclUsers(limiterRedis)).toEqual([
      'default',
      'portcullis-bucket-team-a',
      'portcullis-bucket-team-b',
    ]);
    expect(await aclUsers(authRedis)).toEqual([
      'default',
      'portcullis-auth-team-a',
      'portcullis-auth-team-b',
    ]);
  });

  it("team-a's credentials cannot read, write, list or wipe team-b's keys, nor flush, reconfigure or stop the server", async () => {
    const victims = {
      bucket: 'portcullis:bucket:team-b:v2:{api:u1}',
      deny: 'portcullis:auth:team-b:jti:j1',
      consent: 'portcullis:auth:team-b:consent:alice',
    };
    await admin(limiterRedis).set(victims.bucket, 'state');
    await admin(authRedis).set(victims.deny, '1');
    await admin(authRedis).hset(victims.consent, 'app', '{}');
    const limiter = (await teamClient('team-a', 'api-redis')).client;
    const auth = (await teamClient('team-a', 'portcullis-auth-redis')).client;
    await expect(limiter.get(victims.bucket)).rejects.toThrow(/NOPERM/);
    await expect(limiter.set(victims.bucket, 'full')).rejects.toThrow(/NOPERM/);
    await expect(auth.del(victims.deny)).rejects.toThrow(/NOPERM/);
    await expect(auth.hgetall(victims.consent)).rejects.toThrow(/NOPERM/);
    for (const c of [limiter, auth]) {
      for (const [command, ...args] of [
        ['KEYS', '*'],
        ['SCAN', '0'],
        ['FLUSHALL'],
        ['CONFIG', 'SET', 'maxmemory', '1'],
        ['SHUTDOWN', 'NOSAVE'],
        ['ACL', 'LIST'],
        ['CLIENT', 'KILL', 'TYPE', 'normal'],
        ['MONITOR'],
      ] as const) {
        await expect(c.call(command, ...args), command).rejects.toThrow(/NOPERM/);
      }
    }
    expect(await admin(limiterRedis).get(victims.bucket)).toBe('state');
    expect(await admin(authRedis).exists(victims.deny)).toBe(1);
    expect(await admin(authRedis).hkeys(victims.consent)).toEqual(['app']);
  });

  it("same-named routes in two namespaces keep separate buckets: draining team-a's leaves team-b's full", async () => {
    const get = async () =>
      (
        await fetch(`http://127.0.0.1:${ports.sidecar}/healthcheck/ready`, {
          headers: { 'USER-ID': 'u1' },
        })
      ).status;
    await admin(limiterRedis).del('portcullis:bucket:team-b:v2:{api:u1}'); // the previous test's stand-in
    const statuses: Record<string, number[]> = {};
    for (const team of TEAMS) {
      // One team's pod at a time: both listen on the operator's sidecar ports.
      const pods = createPodRunner(env, team);
      try {
        await pods.runPod('api');
        await eventually(
          `${team} sidecar ready`,
          async () => (await fetch(`http://127.0.0.1:${ports.admin}/readyz`)).status === 200,
        );
        statuses[team] = [await get(), await get(), await get()];
      } finally {
        await pods.stop();
      }
    }
    expect(statuses).toEqual({ 'team-a': [200, 200, 429], 'team-b': [200, 200, 429] });
    // Each under its namespace's prefix, the user id hashed with a secret from that namespace's password.
    const keys = (await admin(limiterRedis).keys('portcullis:bucket:*')).sort();
    expect(keys.filter((k) => k.includes('{api:u1}'))).toEqual([]);
    const expected = await Promise.all(
      TEAMS.map(
        async (team) =>
          `portcullis:bucket:${team}:v2:{${hashBucketKey(keyHashSecretOf(decodeURIComponent(new URL((await teamClient(team, 'api-redis')).url).password)), 'api:u1')}}`,
      ),
    );
    expect(keys).toEqual(expect.arrayContaining(expected));
  });

  it("deleting a namespace's last route and last OAuthClient deletes its Redis users; the other namespace keeps its own", async () => {
    const r = await env.cluster.kubectl([
      '-n',
      'team-b',
      'delete',
      'ratelimitroute/api',
      'oauthclient/app',
      '--wait=false',
    ]);
    expect(r.code, r.stderr).toBe(0);
    await eventually(
      'team-b bucket user gone',
      async () => !(await aclUsers(limiterRedis)).includes('portcullis-bucket-team-b'),
    );
    await eventually(
      'team-b auth user gone',
      async () => !(await aclUsers(authRedis)).includes('portcullis-auth-team-b'),
    );
    expect(await aclUsers(limiterRedis)).toEqual(['default', 'portcullis-bucket-team-a']);
    expect(await aclUsers(authRedis)).toEqual(['default', 'portcullis-auth-team-a']);
    expect(await (await teamClient('team-a', 'api-redis')).client.ping()).toBe('PONG');
  });
});
