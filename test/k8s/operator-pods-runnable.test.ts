// The pods the operator renders are runnable. With no kubelet here, take the
// rendered Deployments' containers (command, args, env, ports) and the ConfigMap/Secret contents
// written where they would be mounted (mount paths rewritten into a temporary directory), run them
// as local processes next to a real redis-server, and pass the specification's 30-request
// scenario (limits 1/10/2) and an OAuth authorization-code flow through them.
import { performance } from 'node:perf_hooks';
import { decodeProtectedHeader } from 'jose';
import { Redis } from 'ioredis';
import { hashBucketKey, keyHashSecretOf } from '../../lib/token-bucket/key-hash.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../lib/config/auth-server.ts';
import { take, takeUs, type BucketRule, type BucketState } from '../../lib/token-bucket/bucket.ts';
import { decodeBucketValue } from '../../lib/token-bucket/bucket-value.ts';
import { freePort, waitForPort } from '../harness/ports.ts';
import { startRedis, type RedisServer } from '../harness/redis.ts';
import { authorize, tokenRequest } from '../harness/auth-flow.ts';
import {
  eventually,
  kget,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';
import { createPodRunner, type PodRunner } from './pod-runner.ts';

const NS = 'team-p';
const rule: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 };
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

let env: OperatorEnv;
let operator: RunningOperator;
let redis: RedisServer;
let pods: PodRunner;
const ports = { target: 0, sidecar: 0, admin: 0, auth: 0 };

const decode = (s: string) => Buffer.from(s, 'base64').toString('utf8');
const runPod = (name: string) => pods.runPod(name);

beforeAll(async () => {
  redis = await startRedis();
  for (const k of Object.keys(ports) as Array<keyof typeof ports>) ports[k] = await freePort();
  env = await startOperatorEnv([NS]);
  pods = createPodRunner(env, NS);
  operator = await startOperator(env, 'op-pods', {
    PORTCULLIS_SIDECAR_PORT: String(ports.sidecar),
    PORTCULLIS_SIDECAR_ADMIN_PORT: String(ports.admin),
    PORTCULLIS_AUTH_SERVER_PORT: String(ports.auth),
    PORTCULLIS_DEFAULT_REDIS_URL: redis.url,
    PORTCULLIS_ISSUER_URL: `http://127.0.0.1:${ports.auth}`,
  });
  const users = {
    users: [
      {
        username: 'alice',
        password_hash: await hashPassword('wonderland'),
        profile: { name: 'Alice', email: 'alice@example.com' },
      },
    ],
  };
  const manifests = `apiVersion: v1
kind: Secret
metadata: { name: portcullis-auth-users, namespace: ${NS} }
stringData:
  users.json: '${JSON.stringify(users)}'
---
apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: all, namespace: ${NS} }
spec:
  target:
    image: portcullis/user-service:test
    command: [node, services/user-service/main.ts]
    port: ${ports.target}
    env: [{ name: PORT, value: "${ports.target}" }, { name: HOST, value: 127.0.0.1 }]
  path: /**
  limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 }
---
apiVersion: portcullis.dev/v1alpha1
kind: OAuthClient
metadata: { name: demo-app, namespace: ${NS} }
spec:
  displayName: Demo App
  redirectUris: [http://127.0.0.1:3000/callback]
  scopes: [profile, email]
  tokenEndpointAuthMethod: client_secret_post
`;
  const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: manifests });
  expect(r.code, r.stderr).toBe(0);
  await eventually('route children', () => kget(env.cluster, ['-n', NS, 'deployment', 'all']));
  await eventually('auth server', () =>
    kget(env.cluster, ['-n', NS, 'deployment', 'portcullis-auth-server']),
  );
  await eventually('registered', async () => {
    const o = (await kget(env.cluster, ['-n', NS, 'oauthclient', 'demo-app'])) as Obj;
    return o['status']?.['conditions']?.[0]?.['reason'] === 'Registered';
  });
});

afterAll(async () => {
  await pods?.stop();
  await operator?.program.stop();
  await env?.stop();
  await redis?.stop();
});

describe('the rendered pods run', () => {
  it('the route pod (target + sidecar, config from the ConfigMap) passes the specification scenario', async () => {
    await runPod('all');
    await eventually(
      'sidecar ready',
      async () => (await fetch(`http://127.0.0.1:${ports.admin}/readyz`)).status === 200,
    );
    const admin = new Redis(redis.url);
    try {
      const key = 'spec-scenario-user';
      const bucketKey = `portcullis:bucket:${NS}:v2:{${hashBucketKey(keyHashSecretOf(''), `all:${key}`)}}`;
      const redisNowUs = async () => {
        const [s, us] = await admin.time();
        return Number(s) * 1_000_000 + Number(us);
      };
      const sendMs: number[] = [];
      const doneMs: number[] = [];
      const redisUs: number[] = [];
      const statuses: number[] = [];
      const start = performance.now();
      for (let i = 0; i < 30; i++) {
        // 0.5 s apart, each after the first 50 ms late: at exact 0.5 s every admission after the
        // burst falls on exactly 2.0 tokens, where a millisecond of noise would decide it.
        const wait = start + i * 500 + (i === 0 ? 0 : 50) - performance.now();
        if (wait > 0) await new Promise((res) => setTimeout(res, wait));
        sendMs.push(performance.now());
        const res = await fetch(`http://127.0.0.1:${ports.sidecar}/healthcheck/ready`, {
          headers: { 'USER-ID': key },
        });
        const body = await res.text();
        doneMs.push(performance.now());
        statuses.push(res.status);
        if (res.status === 200) expect(body).toBe('OK');
        else expect(res.status).toBe(429);
        // Redis' time of the decision: an admitted take stored it; a refused one writes nothing,
        // so the model is asked at Redis TIME just after (refused then means refused before).
        const afterUs = await redisNowUs();
        redisUs.push(
          res.status === 200
            ? (decodeBucketValue(await admin.getBuffer(bucketKey))?.updatedUs ?? Number.NaN)
            : afterUs,
        );
      }
      const actual = statuses.map((s) => s === 200);
      // 1. Decision by decision, the exact model at the times Redis used (the Lua script's clock).
      let exact: BucketState | undefined;
      const fromRedis = redisUs.map((t) => {
        const r = takeUs(exact, rule, t, rule.requestedTokens);
        if (r.decision.allowed) exact = r.state;
        return r.decision.allowed;
      });
      expect(actual).toEqual(fromRedis);
      // 2. The exact model at the client's times: each decision happened between sending and the
      //    response, so the count lies between the model at the send times and at the response times.
      const model = (times: number[]) => {
        let st: BucketState | undefined;
        return times.filter((t) => {
          const r = take(st, rule, t - (sendMs[0] ?? 0));
          st = r.state;
          return r.decision.allowed;
        }).length;
      };
      const counts = [
        model(sendMs),
        model(doneMs.map((t, i) => (i === 0 ? (sendMs[0] ?? 0) : t))),
      ].sort((x, y) => x - y);
      const admitted = actual.filter(Boolean).length;
      expect(admitted).toBeGreaterThanOrEqual(counts[0] ?? 0);
      expect(admitted).toBeLessThanOrEqual(counts[1] ?? 0);
      // 3. When the schedule held (sends within 45 ms of their aim, answers within 40 ms), that is
      //    the 12 the exact model predicts for the specification scenario.
      const slipMs = Math.max(
        ...sendMs.slice(1).map((t, i) => Math.abs(t - (sendMs[0] ?? 0) - (i + 1) * 500 - 50)),
      );
      const slowestMs = Math.max(...doneMs.map((t, i) => t - (sendMs[i] ?? 0)));
      if (slipMs < 45 && slowestMs < 40) expect(admitted).toBe(12);
    } finally {
      admin.disconnect();
    }
  });

  it('the auth-server pod (registry, users and keys from the Secrets) runs the code flow for the generated client, counted on its metrics port', async () => {
    const pod = await runPod('portcullis-auth-server');
    const issuer = `http://127.0.0.1:${ports.auth}`;
    await waitForPort(ports.auth);
    const secret = (await kget(env.cluster, ['-n', NS, 'secret', 'demo-app-oauth-client'])) as Obj;
    const clientId = decode(secret['data']['client_id']);
    const clientSecret = decode(secret['data']['client_secret']);
    const redirectUri = 'http://127.0.0.1:3000/callback';
    const { location, consentShown } = await authorize({
      issuer,
      clientId,
      redirectUri,
      scope: 'profile email',
      state: 's1',
    });
    expect(consentShown).toBe(true);
    expect(location.origin + location.pathname).toBe(redirectUri);
    const code = location.searchParams.get('code');
    expect(code).toBeTruthy();
    // The specification's token request: JSON body, grant_type authorization_token.
    const token = await tokenRequest(
      issuer,
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uri: redirectUri,
        grant_type: 'authorization_token',
        code: code ?? '',
      },
      { json: true },
    );
    expect(token.status).toBe(200);
    const accessToken = String(token.json['access_token']);
    const keys = (await kget(env.cluster, [
      '-n',
      NS,
      'secret',
      'portcullis-auth-signing-keys',
    ])) as Obj;
    const kid = JSON.parse(decode(keys['data']['keys.json']))['keys'][0]['kid'];
    expect(decodeProtectedHeader(accessToken)).toMatchObject({ alg: 'ES256', kid });
    // The container port named `metrics` is where the rendered env makes the auth server serve /metrics.
    const metrics = await (
      await fetch(`http://127.0.0.1:${pod.ports.get('metrics')}/metrics`)
    ).text();
    expect(metrics).toContain(
      'portcullis_auth_access_tokens_issued_total{grant_type="authorization_code"} 1\n',
    );
    expect(metrics).toContain('portcullis_auth_sign_ins_total{result="ok"} 1\n');
  });
});
