// The per-namespace auth server: Deployment reading three mounted Secrets (client registry,
// users, signing keys) by the file paths of its config (lib/config/auth-server.ts). The
// auth server re-reads those files when they change, so a new OAuthClient needs no restart.
import type { V1Deployment, V1NetworkPolicy, V1Service } from '@kubernetes/client-node';
import type { KubeObject } from '../../runtime/kube-object.ts';
import {
  AUTH_CONFIG_ROOT,
  AUTH_SERVER_ENTRY,
  AUTH_SERVER_METRICS_PORT,
  AUTH_SERVER_NAME,
  CLIENT_REGISTRY_KEY,
  CLIENT_REGISTRY_SECRET,
  SIGNING_KEYS_KEY,
  SIGNING_KEYS_SECRET,
} from './names.ts';
import {
  AUTH_SERVER_MEMORY_LIMIT_MIB,
  type ContainerResources,
} from '../shared/container-resources.ts';
import {
  authServerLabels,
  authServerSelectorLabels,
  containerSecurityContext,
  type Owner,
  sortedOwnerRefs,
  podSecurityContext,
} from '../shared/metadata.ts';
import { needsPodDisruptionBudget, podDisruptionBudget } from '../shared/pod-disruption-budget.ts';
import { priorityClassField, topologySpreadConstraints } from '../shared/pod-scheduling.ts';
import { AUTH_REDIS_SECRET, REDIS_URL_KEY } from '../shared/redis-url-secret.ts';
import { AUTH_SERVER_AUDIENCE, type ResourceSettings } from '../shared/settings.ts';
import { nodeEnv, oldSpaceMiB } from '../shared/sidecar-heap.ts';

export const AUTH_SERVER_CONTAINER = 'auth-server';

export function issuerFor(
  namespace: string,
  settings: Pick<ResourceSettings, 'issuerUrl'>,
): string {
  return settings.issuerUrl.replaceAll('{namespace}', namespace);
}

/** Where each mounted file lands in the container (the auth server's AUTH_*_FILE settings). */
export const authServerFiles = {
  clients: `${AUTH_CONFIG_ROOT}/clients/${CLIENT_REGISTRY_KEY}`,
  users: `${AUTH_CONFIG_ROOT}/users/users.json`,
  keys: `${AUTH_CONFIG_ROOT}/keys/${SIGNING_KEYS_KEY}`,
} as const;

/** Young-generation semi-space of the auth server, MiB: measured in `make bench` (token suite, as deployed). */
export const AUTH_SERVER_SEMI_SPACE_MIB = 4;

/**
 * The auth server's V8 caps from its memory limit, as for the sidecar (ADR 0008): old space at half
 * the limit, so V8 collects before the kubelet kills the container, and small semi-spaces.
 */
export function authServerNodeEnv(resources: ContainerResources): ReturnType<typeof nodeEnv> {
  return nodeEnv(AUTH_SERVER_SEMI_SPACE_MIB, oldSpaceMiB(resources, AUTH_SERVER_MEMORY_LIMIT_MIB));
}

/** Without Redis, codes and sessions live in one process's memory: one replica only. */
export function authServerReplicas(
  settings: Pick<ResourceSettings, 'authRedisUrl' | 'authRedisSecret' | 'authServerReplicas'>,
): number {
  return settings.authRedisUrl === undefined && settings.authRedisSecret === undefined
    ? 1
    : settings.authServerReplicas;
}

/**
 * Up to 60 s (30 x 2 s) for the auth server to start (it loads its bundle and connects to Redis)
 * before the liveness probe may restart it.
 */
export const AUTH_SERVER_STARTUP_PROBE = {
  tcpSocket: { port: 'http' },
  periodSeconds: 2,
  timeoutSeconds: 2,
  failureThreshold: 30,
};

export function authServerDeployment(
  namespace: string,
  settings: ResourceSettings,
  owners: readonly Owner[],
): KubeObject {
  const labels = authServerLabels('auth-server');
  const env: Array<
    | { name: string; value: string }
    | { name: string; valueFrom: { secretKeyRef: { name: string; key: string } } }
  > = [
    ...Object.entries(authServerNodeEnv(settings.authServerResources)).map(([name, value]) => ({
      name,
      value,
    })),
    { name: 'PORT', value: String(settings.authServerPort) },
    { name: 'AUTH_METRICS_PORT', value: String(AUTH_SERVER_METRICS_PORT) },
    { name: 'AUTH_ISSUER', value: issuerFor(namespace, settings) },
    // Its Redis keys start with the namespace (lib/tenancy), the only keys its Redis user may touch.
    { name: 'AUTH_NAMESPACE', value: namespace },
    { name: 'AUTH_AUDIENCE', value: AUTH_SERVER_AUDIENCE },
    { name: 'AUTH_CLIENTS_FILE', value: authServerFiles.clients },
    { name: 'AUTH_USERS_FILE', value: authServerFiles.users },
    { name: 'AUTH_KEYS_FILE', value: authServerFiles.keys },
    { name: 'AUTH_ACCESS_TOKEN_TTL_SECONDS', value: String(settings.accessTokenTtlSeconds) },
    { name: 'AUTH_REFRESH_REUSE_GRACE_SECONDS', value: String(settings.refreshReuseGraceSeconds) },
  ];
  if (settings.signInSessions !== undefined) {
    env.push(
      { name: 'AUTH_SIGN_IN_SESSIONS', value: 'true' },
      { name: 'AUTH_SESSION_IDLE_SECONDS', value: String(settings.signInSessions.idleSeconds) },
      {
        name: 'AUTH_SESSION_MAX_AGE_SECONDS',
        value: String(settings.signInSessions.maxAgeSeconds),
      },
    );
  }
  if (settings.authRedisUrl !== undefined)
    env.push({ name: 'REDIS_URL', value: settings.authRedisUrl });
  // A URL with a password only from a Secret: the operator's copy in this namespace (shared/redis-url-secret.ts).
  // Read at start, so a rotated URL reaches the auth servers with their next restart.
  else if (settings.authRedisSecret !== undefined)
    env.push({
      name: 'REDIS_URL',
      valueFrom: { secretKeyRef: { name: AUTH_REDIS_SECRET, key: REDIS_URL_KEY } },
    });
  const replicas = authServerReplicas(settings);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: AUTH_SERVER_NAME,
      namespace,
      labels,
      ownerReferences: sortedOwnerRefs(owners),
    },
    spec: {
      replicas,
      selector: { matchLabels: authServerSelectorLabels() },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      revisionHistoryLimit: 5,
      template: {
        metadata: { labels },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: 30,
          securityContext: podSecurityContext,
          ...priorityClassField(undefined, settings.priorityClassName),
          topologySpreadConstraints: topologySpreadConstraints(authServerSelectorLabels()),
          containers: [
            {
              name: AUTH_SERVER_CONTAINER,
              image: settings.authServerImage,
              imagePullPolicy: settings.imagePullPolicy,
              command: ['node', AUTH_SERVER_ENTRY],
              env,
              // metrics: GET /metrics for a PodMonitor, apart from the public port (not in the Service).
              ports: [
                { name: 'http', containerPort: settings.authServerPort, protocol: 'TCP' },
                { name: 'metrics', containerPort: AUTH_SERVER_METRICS_PORT, protocol: 'TCP' },
              ],
              startupProbe: AUTH_SERVER_STARTUP_PROBE,
              readinessProbe: {
                httpGet: {
                  path: '/.well-known/oauth-authorization-server',
                  port: 'http',
                  scheme: 'HTTP',
                },
                periodSeconds: 5,
                timeoutSeconds: 2,
                failureThreshold: 3,
              },
              livenessProbe: {
                tcpSocket: { port: 'http' },
                periodSeconds: 10,
                timeoutSeconds: 2,
                failureThreshold: 3,
              },
              resources: settings.authServerResources,
              securityContext: containerSecurityContext,
              volumeMounts: [
                { name: 'clients', mountPath: `${AUTH_CONFIG_ROOT}/clients`, readOnly: true },
                { name: 'users', mountPath: `${AUTH_CONFIG_ROOT}/users`, readOnly: true },
                { name: 'keys', mountPath: `${AUTH_CONFIG_ROOT}/keys`, readOnly: true },
                { name: 'tmp', mountPath: '/tmp' },
              ],
            },
          ],
          volumes: [
            {
              name: 'clients',
              secret: {
                secretName: CLIENT_REGISTRY_SECRET,
                items: [{ key: CLIENT_REGISTRY_KEY, path: CLIENT_REGISTRY_KEY }],
              },
            },
            {
              name: 'users',
              secret: {
                secretName: settings.usersSecretName,
                items: [{ key: settings.usersSecretKey, path: 'users.json' }],
              },
            },
            {
              name: 'keys',
              secret: {
                secretName: SIGNING_KEYS_SECRET,
                items: [{ key: SIGNING_KEYS_KEY, path: SIGNING_KEYS_KEY }],
              },
            },
            { name: 'tmp', emptyDir: { sizeLimit: '16Mi' } },
          ],
        },
      },
    },
  } satisfies V1Deployment;
}

/** The name, labels and owners the auth server's Service and NetworkPolicy carry. */
function authServerMetadata(namespace: string, owners: readonly Owner[]) {
  return {
    name: AUTH_SERVER_NAME,
    namespace,
    labels: authServerLabels('auth-server'),
    ownerReferences: sortedOwnerRefs(owners),
  };
}

export function authServerService(
  namespace: string,
  settings: ResourceSettings,
  owners: readonly Owner[],
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: authServerMetadata(namespace, owners),
    spec: {
      type: 'ClusterIP',
      selector: authServerSelectorLabels(),
      ports: [{ name: 'http', port: settings.servicePort, targetPort: 'http', protocol: 'TCP' }],
    },
  } satisfies V1Service;
}

/**
 * The auth server's pods take ingress only on their two ports (the issuer's HTTP port, from
 * anywhere: browsers, clients and sidecars fetching the JWKS; and metrics). It takes effect only
 * where the cluster's CNI enforces NetworkPolicies.
 */
export function authServerNetworkPolicy(
  namespace: string,
  settings: ResourceSettings,
  owners: readonly Owner[],
): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: authServerMetadata(namespace, owners),
    spec: {
      podSelector: { matchLabels: authServerSelectorLabels() },
      policyTypes: ['Ingress'],
      ingress: [
        {
          ports: [
            { protocol: 'TCP', port: settings.authServerPort },
            { protocol: 'TCP', port: AUTH_SERVER_METRICS_PORT },
          ],
        },
      ],
    },
  } satisfies V1NetworkPolicy;
}

/** The auth server's budget while it runs more than one replica; undefined otherwise (any existing one is then deleted). */
export function authServerPodDisruptionBudget(
  namespace: string,
  settings: ResourceSettings,
  owners: readonly Owner[],
): KubeObject | undefined {
  if (!needsPodDisruptionBudget(authServerReplicas(settings))) return undefined;
  return podDisruptionBudget({
    name: AUTH_SERVER_NAME,
    namespace,
    labels: authServerLabels('auth-server'),
    selectorLabels: authServerSelectorLabels(),
    ownerReferences: sortedOwnerRefs(owners),
  });
}
