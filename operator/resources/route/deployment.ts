// RateLimitRoute -> Deployment: the target container and the sidecar in one pod (with
// spec.upstream, a gateway: the sidecar alone, forwarding to the team's Service). A spec change
// reaches running pods by a rolling restart: the pod template carries a hash of the sidecar
// config, so a new config is a new template (maxUnavailable 0: capacity never drops).
//
// A pod that stops (a roll, a deletion, a node drain) must fail no request. Both containers get
// their preStop at once: the sidecar pauses SIDECAR_PRESTOP_SECONDS so the endpoints and every
// node's proxy rules drop the pod while it still serves, then drains its in-flight requests (up
// to its shutdownGraceMs); the target pauses until both are over, so the sidecar never forwards
// to a target that has already stopped.
import type { V1Container, V1Deployment } from '@kubernetes/client-node';
import type { RateLimitRoute, Target } from '../../api/index.ts';
import { contentHash } from '../../runtime/compare.ts';
import { InvalidSpecError } from '../../runtime/errors.ts';
import type { KubeObject } from '../../runtime/kube-object.ts';
import {
  CONFIG_HASH_ANNOTATION,
  containerSecurityContext,
  controllerRef,
  podSecurityContext,
  routeLabels,
  routeSelectorLabels,
  SIDECAR_POD_LABELS,
} from '../shared/metadata.ts';
import {
  REDIS_URL_VOLUME,
  routeConfigMapName,
  SIDECAR_CONFIG_DIR,
  SIDECAR_CONFIG_KEY,
  SIDECAR_CONTAINER,
  SIDECAR_REDIS_DIR,
  SIDECAR_REDIS_URL_FILE,
  TARGET_CONTAINER,
} from './names.ts';
import {
  overrideResources,
  quantitiesAsStrings,
  resourcesProblem,
} from '../shared/container-resources.ts';
import { priorityClassField, topologySpreadConstraints } from '../shared/pod-scheduling.ts';
import { routeSidecarPorts } from './ports.ts';
import { routeRedisSecretRef } from './redis.ts';
import { routeReplicas } from './scale.ts';
import type { ResourceSettings } from '../shared/settings.ts';
import { sidecarEnv, sidecarMemoryProblem } from '../shared/sidecar-heap.ts';

export { SIDECAR_ENV, SIDECAR_MEMORY_LIMIT_MIB } from '../shared/sidecar-heap.ts';

/** The sidecar image runs its bundle (scripts/build-programs.ts), not the TypeScript sources. */
export const SIDECAR_ENTRY = 'dist/sidecar/main.mjs';
/** Pause before the sidecar's SIGTERM (s): time for endpoints and node proxies to drop the pod. */
export const SIDECAR_PRESTOP_SECONDS = 5;
/** The sidecar's longest drain of in-flight requests after SIGTERM (s): its config's default shutdownGraceMs. */
export const SIDECAR_DRAIN_SECONDS = 10;
/** Pause before the target's SIGTERM (s): it outlives the sidecar's pause and drain. */
export const TARGET_PRESTOP_SECONDS = SIDECAR_PRESTOP_SECONDS + SIDECAR_DRAIN_SECONDS;
/** The pod's grace (s): the target's pause plus time for it to stop on its own. */
export const ROUTE_POD_GRACE_SECONDS = TARGET_PRESTOP_SECONDS + 15;
/**
 * The sidecar's startup probe: up to 60 s (30 x 2 s) to load its config and connect before the
 * liveness probe may restart it, on a busy node where node itself starts slowly.
 */
export const SIDECAR_STARTUP_PROBE = {
  httpGet: { path: '/healthz', port: 'admin', scheme: 'HTTP' },
  periodSeconds: 2,
  timeoutSeconds: 2,
  failureThreshold: 30,
};

/** The sidecar's resources (settings, overridden by spec.sidecar.resources); InvalidSpecError when the API server or the sidecar could not run with them. */
export function sidecarResources(
  route: RateLimitRoute,
  settings: Pick<ResourceSettings, 'sidecarResources'>,
): ReturnType<typeof overrideResources> {
  const resources = overrideResources(settings.sidecarResources, route.spec.sidecar?.resources);
  const problem = resourcesProblem(resources) ?? sidecarMemoryProblem(resources);
  if (problem !== undefined) throw new InvalidSpecError(`spec.sidecar.resources: ${problem}`);
  return resources;
}

/** The team's service beside the sidecar (not in a spec.upstream gateway, whose pods hold the sidecar only). */
function targetContainer(target: Target): V1Container {
  return {
    name: TARGET_CONTAINER,
    image: target.image,
    ...(target.command === undefined ? {} : { command: target.command }),
    ...(target.args === undefined ? {} : { args: target.args }),
    ...(target.env === undefined || target.env.length === 0 ? {} : { env: target.env }),
    ports: [{ name: 'target', containerPort: target.port, protocol: 'TCP' }],
    readinessProbe: {
      httpGet: { path: target.readinessPath, port: target.port, scheme: 'HTTP' },
      periodSeconds: 5,
      timeoutSeconds: 2,
      failureThreshold: 3,
    },
    ...(target.resources === undefined ? {} : { resources: quantitiesAsStrings(target.resources) }),
    securityContext: containerSecurityContext,
    lifecycle: { preStop: { sleep: { seconds: TARGET_PRESTOP_SECONDS } } },
    volumeMounts: [{ name: 'target-tmp', mountPath: '/tmp' }],
  };
}

export function routeDeployment(
  route: RateLimitRoute,
  settings: ResourceSettings,
  sidecarConfigText: string,
): KubeObject {
  const name = route.metadata.name;
  const { target } = route.spec;
  // spec.redis.secretRef (or the operator's copy of its default Redis Secret): the one key,
  // read-only, as the file the sidecar config names. A volume (not a subPath mount) so that the
  // kubelet's rewrite on a Secret rotation reaches the sidecar.
  const secretRef = routeRedisSecretRef(route, settings);
  const redisVolumes =
    secretRef === undefined
      ? []
      : [
          {
            name: REDIS_URL_VOLUME,
            secret: {
              secretName: secretRef.name,
              items: [
                {
                  key: secretRef.key,
                  path: SIDECAR_REDIS_URL_FILE.slice(SIDECAR_REDIS_DIR.length + 1),
                },
              ],
              defaultMode: 0o440,
            },
          },
        ];
  const redisMounts =
    secretRef === undefined
      ? []
      : [{ name: REDIS_URL_VOLUME, mountPath: SIDECAR_REDIS_DIR, readOnly: true }];
  const ports = routeSidecarPorts(route, settings);
  const replicas = routeReplicas(route);
  const labels = routeLabels(name);
  const sidecarRes = sidecarResources(route, settings);

  const sidecarContainer = {
    name: SIDECAR_CONTAINER,
    image: settings.sidecarImage,
    imagePullPolicy: settings.imagePullPolicy,
    command: ['node', SIDECAR_ENTRY],
    args: ['--config', `${SIDECAR_CONFIG_DIR}/${SIDECAR_CONFIG_KEY}`],
    // The heap caps follow the memory limit (ADR 0008): old space at half of it.
    env: Object.entries(sidecarEnv(sidecarRes)).map(([envName, value]) => ({
      name: envName,
      value,
    })),
    ports: [
      { name: 'http', containerPort: ports.proxy, protocol: 'TCP' },
      { name: 'admin', containerPort: ports.admin, protocol: 'TCP' },
    ],
    startupProbe: SIDECAR_STARTUP_PROBE,
    readinessProbe: {
      httpGet: { path: '/readyz', port: 'admin', scheme: 'HTTP' },
      periodSeconds: 5,
      timeoutSeconds: 2,
      failureThreshold: 3,
    },
    livenessProbe: {
      httpGet: { path: '/healthz', port: 'admin', scheme: 'HTTP' },
      periodSeconds: 10,
      timeoutSeconds: 2,
      failureThreshold: 3,
    },
    resources: sidecarRes,
    securityContext: containerSecurityContext,
    lifecycle: { preStop: { sleep: { seconds: SIDECAR_PRESTOP_SECONDS } } },
    volumeMounts: [
      { name: 'sidecar-config', mountPath: SIDECAR_CONFIG_DIR, readOnly: true },
      { name: 'sidecar-tmp', mountPath: '/tmp' },
      ...redisMounts,
    ],
  };

  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace: route.metadata.namespace,
      labels,
      ownerReferences: [controllerRef(route)],
    },
    spec: {
      // Omitted: the count belongs to an autoscaler of the Deployment (scale.ts).
      ...(replicas === undefined ? {} : { replicas }),
      selector: { matchLabels: routeSelectorLabels(name) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      revisionHistoryLimit: 5,
      template: {
        metadata: {
          labels: { ...labels, ...SIDECAR_POD_LABELS },
          annotations: { [CONFIG_HASH_ANNOTATION]: contentHash(sidecarConfigText) },
        },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: ROUTE_POD_GRACE_SECONDS,
          securityContext: podSecurityContext,
          ...priorityClassField(route.spec.priorityClassName, settings.priorityClassName),
          topologySpreadConstraints: topologySpreadConstraints(routeSelectorLabels(name)),
          containers:
            target === undefined ? [sidecarContainer] : [targetContainer(target), sidecarContainer],
          volumes: [
            {
              name: 'sidecar-config',
              configMap: {
                name: routeConfigMapName(name),
                items: [{ key: SIDECAR_CONFIG_KEY, path: SIDECAR_CONFIG_KEY }],
              },
            },
            { name: 'sidecar-tmp', emptyDir: { sizeLimit: '16Mi' } },
            ...(target === undefined
              ? []
              : [{ name: 'target-tmp', emptyDir: { sizeLimit: '64Mi' } }]),
            ...redisVolumes,
          ],
        },
      },
    },
  } satisfies V1Deployment;
}
