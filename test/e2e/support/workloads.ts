// What the e2e test files deploy into the cluster, and the in-cluster client that talks to it:
// a namespace per file, RateLimitRoutes running the project's user-service image, and a client
// pod (the same image, so it has node) that runs the scripts in test/e2e/in-cluster/ on stdin.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { hashPassword } from '../../../lib/config/passwords.ts';
import { repoRoot } from '../../harness/programs.ts';
import { imageOf, type E2eContext } from '../../harness/kind/context.ts';
import type { Kube } from '../../harness/kind/kube.ts';
import { bundleEntry } from '../../../scripts/bundle.ts';

export const USER_SERVICE = 'services/user-service';
export const CLIENT_POD = 'client';
/** A container's security context under the restricted Pod Security Standard, read-only root included. */
export const RESTRICTED_CONTAINER = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
};

export function namespaceFor(prefix: string): string {
  return `e2e-${prefix}-${randomBytes(3).toString('hex')}`;
}

export interface RouteOptions {
  readonly replicas?: number;
  /** spec.limiter: the single-limit form, or any other the CRD takes (rules, key). */
  readonly limits:
    | { replenishRate: number; burstCapacity: number; requestedTokens: number }
    | Record<string, unknown>;
  readonly env?: ReadonlyArray<{ name: string; value: string }>;
}

/** A RateLimitRoute in front of the project's user service (port 8081, readiness /healthcheck/ready). */
export function route(ctx: E2eContext, name: string, o: RouteOptions): object {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name },
    spec: {
      target: {
        image: imageOf(ctx, USER_SERVICE),
        command: ['node', bundleEntry('user-service')],
        port: 8081,
        env: [{ name: 'PORT', value: '8081' }, ...(o.env ?? [])],
        readinessPath: '/healthcheck/ready',
        replicas: o.replicas ?? 1,
      },
      path: '/**',
      limiter: o.limits,
    },
  };
}

/** The auth server's users Secret under the chart's default name and key, passwords hashed with scrypt; an email given is a verified one. */
export async function usersSecret(
  users: ReadonlyArray<{ username: string; password: string; name?: string; email?: string }>,
): Promise<object> {
  const records = await Promise.all(
    users.map(async (u) => ({
      username: u.username,
      password_hash: await hashPassword(u.password),
      ...(u.name === undefined && u.email === undefined
        ? {}
        : {
            profile: {
              preferred_username: u.username,
              ...(u.name === undefined ? {} : { name: u.name }),
              ...(u.email === undefined ? {} : { email: u.email, email_verified: true }),
            },
          }),
    })),
  );
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'portcullis-auth-users' },
    stringData: { 'users.json': JSON.stringify({ users: records }) },
  };
}

/** An OAuthClient asking for the profile scope. */
export function oauthClient(
  name: string,
  redirectUris: readonly string[],
  spec: Record<string, unknown> = {},
): object {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'OAuthClient',
    metadata: { name },
    spec: { displayName: name, redirectUris, scopes: ['profile'], ...spec },
  };
}

/** The in-cluster client: node from the user-service image, doing nothing until exec'd into. */
export function clientPod(ctx: E2eContext): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: CLIENT_POD, labels: { 'app.kubernetes.io/name': 'e2e-client' } },
    spec: {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 1000,
        runAsGroup: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'client',
          image: imageOf(ctx, USER_SERVICE),
          imagePullPolicy: 'IfNotPresent',
          command: ['node', '-e', 'setInterval(() => {}, 1 << 30)'],
          securityContext: RESTRICTED_CONTAINER,
          volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
        },
      ],
      volumes: [{ name: 'tmp', emptyDir: {} }],
    },
  };
}

/** Creates the namespace, the given objects and the client pod; waits for the routes and the client to be Ready. */
export async function deploy(
  kube: Kube,
  ctx: E2eContext,
  namespace: string,
  objects: readonly object[],
): Promise<void> {
  await kube.createNamespace(namespace);
  await kube.apply([...objects, clientPod(ctx)], namespace);
  await kube.wait(namespace, ['pod', CLIENT_POD], 'condition=Ready', 180);
  const routes = objects
    .filter((o) => (o as { kind?: string }).kind === 'RateLimitRoute')
    .map((o) => (o as { metadata: { name: string } }).metadata.name);
  if (routes.length > 0)
    await kube.wait(
      namespace,
      routes.map((r) => `ratelimitroute/${r}`),
      'condition=Ready',
      300,
    );
  // Ready pods are not yet a Service that answers: the node's proxy rules follow the endpoints a
  // moment later. Wait for an answer through each route's Service, as a client would see it.
  for (const name of routes) {
    await kube.exec(
      namespace,
      CLIENT_POD,
      [
        'node',
        '--input-type=module',
        '-e',
        SERVICE_ANSWERS,
        `http://${name}.${namespace}.svc.cluster.local/healthcheck/ready`,
      ],
      { timeoutMs: 90_000 },
    );
  }
}

/** node -e script: retries a GET (with a USER-ID) until any HTTP answer comes back, for up to 60 s. */
const SERVICE_ANSWERS = `
const url = process.argv[1];
const deadline = Date.now() + 60000;
for (;;) {
  try { await fetch(url, { headers: { 'USER-ID': 'e2e-probe' } }); break; }
  catch (err) { if (Date.now() > deadline) { console.error(String(err)); process.exit(1); } await new Promise((r) => setTimeout(r, 200)); }
}`;

/**
 * Runs one of test/e2e/in-cluster/*.mjs in the client pod with PARAMS, and parses the JSON line
 * it prints last.
 */
export async function inCluster<T>(
  kube: Kube,
  namespace: string,
  script: 'scenario' | 'burst' | 'stream' | 'probe',
  params: Record<string, unknown>,
  timeoutMs = 180_000,
): Promise<T> {
  const body = readFileSync(
    path.join(repoRoot, 'test', 'e2e', 'in-cluster', `${script}.mjs`),
    'utf8',
  );
  const source = `const PARAMS = ${JSON.stringify(params)};\n${body}`;
  const out = await kube.exec(namespace, CLIENT_POD, ['node', '--input-type=module', '-'], {
    input: source,
    timeoutMs,
  });
  const last = out.trim().split('\n').pop() ?? '';
  return JSON.parse(last) as T;
}

export interface PodInfo {
  readonly name: string;
  readonly ip: string;
  readonly ready: boolean;
  readonly uid: string;
  readonly containers: ReadonlyArray<{
    name: string;
    ready: boolean;
    restartCount: number;
    state: Record<string, unknown>;
  }>;
}

interface PodJson {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  status: {
    podIP?: string;
    conditions?: Array<{ type: string; status: string }>;
    containerStatuses?: Array<{
      name: string;
      ready: boolean;
      restartCount: number;
      state: Record<string, unknown>;
    }>;
  };
}

/** Pods of a route (its Deployment's selector), not terminating. */
export async function routePods(
  kube: Kube,
  namespace: string,
  routeName: string,
): Promise<PodInfo[]> {
  const list = await kube.json<{ items: PodJson[] }>([
    '-n',
    namespace,
    'get',
    'pods',
    '-l',
    `app.kubernetes.io/instance=${routeName},app.kubernetes.io/name=portcullis-gateway`,
  ]);
  return list.items
    .filter((p) => p.metadata.deletionTimestamp === undefined)
    .map((p) => ({
      name: p.metadata.name,
      uid: p.metadata.uid,
      ip: p.status.podIP ?? '',
      ready: (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
      containers: (p.status.containerStatuses ?? []).map((c) => ({
        name: c.name,
        ready: c.ready,
        restartCount: c.restartCount,
        state: c.state,
      })),
    }));
}
