// RateLimitPolicy -> the decision service's objects: the sidecar image in `mode: decision`
// (ConfigMap, Deployment, Service, PodDisruptionBudget, NetworkPolicy, and the copy of the
// operator's default Redis Secret). The route renderers draw them from a RateLimitRoute with an
// upstream (a sidecar-only gateway); the policy hands them an equivalent route named after its
// children, then takes the result over: its own owner reference and labels, the gRPC port, and a
// config in decision mode (no upstream) validated with the sidecar's own schema.
import type { V1NetworkPolicy, V1Service } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import {
  API_VERSION,
  RATE_LIMIT_ROUTE_KIND,
  type RateLimitPolicy,
  type RateLimitRoute,
} from '../api/index.ts';
import {
  ConfigError,
  parseSidecarConfig,
  type SidecarConfigInput,
} from '../../lib/config/sidecar.ts';
import { InvalidSpecError } from '../runtime/errors.ts';
import { asRecord, type KubeObject } from '../runtime/kube-object.ts';
import {
  baseLabels,
  controllerRef,
  ROUTE_LABEL,
  routeSelectorLabels,
} from '../resources/shared/metadata.ts';
import { routeRedisSecret } from '../resources/shared/redis-url-secret.ts';
import { sidecarConfigFor } from '../resources/route/config-map.ts';
import { routeDeployment } from '../resources/route/deployment.ts';
import { routeConfigMapName, SIDECAR_CONFIG_KEY } from '../resources/route/names.ts';
import { routePodDisruptionBudget } from '../resources/route/pod-disruption-budget.ts';
import { sidecarPorts, type SidecarPorts } from '../resources/route/ports.ts';
import type { ResourceSettings } from '../resources/shared/settings.ts';

/** On every child of a policy: which policy it serves. */
export const POLICY_LABEL = 'portcullis.dev/policy';
/** The decision service's gRPC ext_authz port (Envoy's usual 9191), moved up past the HTTP and admin ports. */
export const DECISION_GRPC_PORT = 9191;

/**
 * Name of the policy's Deployment, Service, NetworkPolicy and budget (`-sidecar` and `-redis`
 * suffixed for the ConfigMap and Secret). A RateLimitRoute may carry the same name: whichever came
 * first keeps it, the other reports a conflict (neither adopts the other's objects).
 */
export function decisionName(policy: string): string {
  return `${policy}-decision`;
}

export interface DecisionPorts extends SidecarPorts {
  grpc: number;
}

export function decisionPorts(
  settings: Pick<ResourceSettings, 'sidecarPort' | 'sidecarAdminPort'>,
): DecisionPorts {
  const { proxy, admin } = sidecarPorts(undefined, settings);
  let grpc = DECISION_GRPC_PORT;
  while (grpc === proxy || grpc === admin) grpc++;
  return { proxy, admin, grpc };
}

/** The route the renderers draw the decision service from: a sidecar-only gateway named after the policy's children. */
export function decisionRoute(policy: RateLimitPolicy): RateLimitRoute {
  const { spec, metadata } = policy;
  return {
    apiVersion: API_VERSION,
    kind: RATE_LIMIT_ROUTE_KIND,
    metadata: {
      name: decisionName(metadata.name),
      namespace: metadata.namespace,
      uid: metadata.uid,
    },
    // The upstream is never called (decision mode has none): it only makes the gateway pod shape.
    spec: {
      upstream: { service: { name: 'none', port: 1 }, replicas: spec.replicas },
      path: '/**',
      limiter: spec.limiter,
      ...(spec.redis === undefined ? {} : { redis: spec.redis }),
    },
  };
}

/** The decision service's config file (YAML), checked with the sidecar's schema; InvalidSpecError names the field. */
export function renderDecisionConfig(policy: RateLimitPolicy, settings: ResourceSettings): string {
  const { upstream: _none, ...proxy } = sidecarConfigFor(decisionRoute(policy), settings);
  const config: SidecarConfigInput = {
    mode: 'decision',
    ...proxy,
    decision: { grpc: { host: '0.0.0.0', port: decisionPorts(settings).grpc } },
  };
  try {
    parseSidecarConfig(config);
  } catch (err) {
    if (err instanceof ConfigError)
      throw new InvalidSpecError(`the decision service would reject this policy: ${err.message}`);
    throw err;
  }
  return stringify(config, { sortMapEntries: false });
}

function policyLabels(policy: RateLimitPolicy, component: string): Record<string, string> {
  return {
    ...baseLabels('portcullis-gateway', decisionName(policy.metadata.name), component),
    [POLICY_LABEL]: policy.metadata.name,
  };
}

/** The renderers' object made the policy's: its controller reference, its labels instead of the route label. */
function takeOver(obj: KubeObject, policy: RateLimitPolicy): KubeObject {
  const relabel = (labels: Record<string, string> | undefined): Record<string, string> => {
    const { [ROUTE_LABEL]: _route, ...rest } = labels ?? {};
    return { ...rest, [POLICY_LABEL]: policy.metadata.name };
  };
  const out: KubeObject = {
    ...obj,
    metadata: {
      ...obj.metadata,
      labels: relabel(obj.metadata.labels),
      ownerReferences: [controllerRef(policy)],
    },
  };
  const template = asRecord(asRecord(out['spec'])?.['template']);
  const templateMeta = asRecord(template?.['metadata']);
  if (template !== undefined && templateMeta !== undefined) {
    const labels = asRecord(templateMeta['labels']) as Record<string, string> | undefined;
    out['spec'] = {
      ...asRecord(out['spec']),
      template: { ...template, metadata: { ...templateMeta, labels: relabel(labels) } },
    };
  }
  return out;
}

export function decisionConfigMap(policy: RateLimitPolicy, configText: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: routeConfigMapName(decisionName(policy.metadata.name)),
      namespace: policy.metadata.namespace,
      labels: policyLabels(policy, 'decision-config'),
      ownerReferences: [controllerRef(policy)],
    },
    data: { [SIDECAR_CONFIG_KEY]: configText },
  };
}

/** The route's gateway Deployment in decision mode: the gRPC port added to the sidecar container. */
export function decisionDeployment(
  policy: RateLimitPolicy,
  settings: ResourceSettings,
  configText: string,
): KubeObject {
  const deployment = takeOver(routeDeployment(decisionRoute(policy), settings, configText), policy);
  const grpc = { name: 'grpc', containerPort: decisionPorts(settings).grpc, protocol: 'TCP' };
  const spec = asRecord(deployment['spec']) ?? {};
  const template = asRecord(spec['template']) ?? {};
  const podSpec = asRecord(template['spec']) ?? {};
  const containers = (podSpec['containers'] as Array<Record<string, unknown>>).map((c) => ({
    ...c,
    ports: [...(c['ports'] as unknown[]), grpc],
  }));
  return {
    ...deployment,
    spec: { ...spec, template: { ...template, spec: { ...podSpec, containers } } },
  };
}

/** `grpc` (Envoy ext_authz gRPC, what the ExternalAuth filter names), `http` (HTTP ext_authz, forward-auth), `metrics`. */
export function decisionService(policy: RateLimitPolicy, settings: ResourceSettings): KubeObject {
  const name = decisionName(policy.metadata.name);
  const ports = decisionPorts(settings);
  const numbers = new Set([settings.servicePort, ports.grpc]);
  let metricsPort = settings.sidecarAdminPort;
  while (numbers.has(metricsPort)) metricsPort++;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: policy.metadata.namespace,
      labels: policyLabels(policy, 'decision'),
      ownerReferences: [controllerRef(policy)],
    },
    spec: {
      type: 'ClusterIP',
      selector: routeSelectorLabels(name),
      ports: [
        { name: 'http', port: settings.servicePort, targetPort: 'http', protocol: 'TCP' },
        {
          name: 'grpc',
          port: ports.grpc,
          targetPort: 'grpc',
          protocol: 'TCP',
          appProtocol: 'kubernetes.io/h2c',
        },
        { name: 'metrics', port: metricsPort, targetPort: 'admin', protocol: 'TCP' },
      ],
    },
  } satisfies V1Service;
}

/** The decision pods take ingress on their three ports only (where the CNI enforces NetworkPolicies). */
export function decisionNetworkPolicy(
  policy: RateLimitPolicy,
  settings: ResourceSettings,
): KubeObject {
  const name = decisionName(policy.metadata.name);
  const ports = decisionPorts(settings);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name,
      namespace: policy.metadata.namespace,
      labels: policyLabels(policy, 'decision'),
      ownerReferences: [controllerRef(policy)],
    },
    spec: {
      podSelector: { matchLabels: routeSelectorLabels(name) },
      policyTypes: ['Ingress'],
      ingress: [
        {
          ports: [ports.proxy, ports.grpc, ports.admin].map((port) => ({ protocol: 'TCP', port })),
        },
      ],
    },
  } satisfies V1NetworkPolicy;
}

/** The budget while more than one pod runs (undefined: none, any old one goes). */
export function decisionPodDisruptionBudget(policy: RateLimitPolicy): KubeObject | undefined {
  const budget = routePodDisruptionBudget(decisionRoute(policy));
  return budget === undefined ? undefined : takeOver(budget, policy);
}

/** The operator's default Redis Secret, copied beside the policy (as the namespace's Redis user). */
export function decisionRedisSecret(policy: RateLimitPolicy, urlBase64: string): KubeObject {
  return takeOver(routeRedisSecret(decisionRoute(policy), urlBase64), policy);
}
