// The NetworkPolicies that keep a route's limiter from being walked around:
//   `<route>`           the pods running the route's sidecar take ingress only on the sidecar's
//                       proxy and admin/metrics ports, so nobody reaches the service's own port on
//                       the pod IP. Those are the route's own pods (target, upstream gateway) or,
//                       with spec.targetRef, the team's pods the sidecar was injected into (by the
//                       two labels injection adds, so pods still without the sidecar mid-rollout are
//                       left as they were: they do not listen on the sidecar ports).
//   `<route>.upstream`  with spec.upstream, the pods the upstream Service selects take ingress only
//                       from the route's gateway pods. The dot keeps the name apart from any
//                       route's own (route names are DNS-1035 labels, without dots).
// Any source may reach the sidecar ports (the Service, an ingress controller, a metrics scraper);
// the kubelet's probes come from the node, which NetworkPolicies always admit. They take effect
// only where the cluster's CNI enforces NetworkPolicies.
import type { V1NetworkPolicy } from '@kubernetes/client-node';
import type { RateLimitRoute } from '../../api/index.ts';
import type { KubeObject } from '../../runtime/kube-object.ts';
import {
  controllerRef,
  injectedPodLabels,
  routeLabels,
  routeSelectorLabels,
} from '../shared/metadata.ts';
import { routeUpstreamNetworkPolicyName } from './names.ts';
import { routeSidecarPorts } from './ports.ts';
import type { ResourceSettings } from '../shared/settings.ts';

/** Whether the route gets its NetworkPolicies: the operator's setting and the route's own opt-out. */
export function routeWantsNetworkPolicy(
  route: RateLimitRoute,
  settings: Pick<ResourceSettings, 'routeNetworkPolicy'>,
): boolean {
  return settings.routeNetworkPolicy && route.spec.networkPolicy?.enabled !== false;
}

/** The labels of the pods running the route's sidecar. */
export function routeSidecarPodLabels(route: RateLimitRoute): Record<string, string> {
  const name = route.metadata.name;
  return route.spec.targetRef === undefined ? routeSelectorLabels(name) : injectedPodLabels(name);
}

function policyMetadata(route: RateLimitRoute, name: string) {
  return {
    name,
    namespace: route.metadata.namespace,
    labels: routeLabels(route.metadata.name),
    ownerReferences: [controllerRef(route)],
  };
}

export function routeNetworkPolicy(route: RateLimitRoute, settings: ResourceSettings): KubeObject {
  const ports = routeSidecarPorts(route, settings);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: policyMetadata(route, route.metadata.name),
    spec: {
      podSelector: { matchLabels: routeSidecarPodLabels(route) },
      policyTypes: ['Ingress'],
      ingress: [
        {
          ports: [
            { protocol: 'TCP', port: ports.proxy },
            { protocol: 'TCP', port: ports.admin },
          ],
        },
      ],
    },
  } satisfies V1NetworkPolicy;
}

/**
 * spec.upstream: the pods behind the upstream Service (its spec.selector, as read from the API)
 * admit ingress only from the route's gateway pods, on any port.
 */
export function upstreamNetworkPolicy(
  route: RateLimitRoute,
  serviceSelector: Record<string, string>,
): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: policyMetadata(route, routeUpstreamNetworkPolicyName(route.metadata.name)),
    spec: {
      podSelector: { matchLabels: serviceSelector },
      policyTypes: ['Ingress'],
      // `from` is the API's field (the client library's type spells it _from).
      ingress: [
        { from: [{ podSelector: { matchLabels: routeSelectorLabels(route.metadata.name) } }] },
      ],
    },
  };
}
