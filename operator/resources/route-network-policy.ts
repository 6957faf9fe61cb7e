// RateLimitRoute -> NetworkPolicy `<route>`: the route's pods take ingress only on the sidecar's
// proxy and admin/metrics ports, so nobody walks around the limiter to the target container's own
// port on the pod IP. Any source may reach those two ports (the Service, an ingress controller, a
// metrics scraper); the kubelet's probes of the target come from the node, which NetworkPolicies
// always admit. It takes effect only where the cluster's CNI enforces NetworkPolicies.
import type { V1NetworkPolicy } from '@kubernetes/client-node';
import type { RateLimitRoute } from '../api/index.ts';
import type { KubeObject } from '../runtime/kube-object.ts';
import { baseLabels, controllerRef, ROUTE_LABEL } from './metadata.ts';
import { routeSelectorLabels } from './route-deployment.ts';
import { routeNetworkPolicyName } from './route-names.ts';
import { routeSidecarPorts } from './route-ports.ts';
import type { ResourceSettings } from './settings.ts';

export function routeNetworkPolicy(route: RateLimitRoute, settings: ResourceSettings): KubeObject {
  const name = route.metadata.name;
  const ports = routeSidecarPorts(route, settings);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: routeNetworkPolicyName(name),
      namespace: route.metadata.namespace,
      labels: { ...baseLabels('portcullis-gateway', name, 'gateway'), [ROUTE_LABEL]: name },
      ownerReferences: [controllerRef(route)],
    },
    spec: {
      podSelector: { matchLabels: routeSelectorLabels(name) },
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
