// RateLimitRoute -> Service in front of the sidecars (never the target directly).
import type { RateLimitRoute } from '../api/index.ts';
import type { KubeObject } from '../runtime/kube-object.ts';
import { baseLabels, controllerRef, ROUTE_LABEL } from './metadata.ts';
import { routeSelectorLabels } from './route-deployment.ts';
import { routeServiceName } from './route-names.ts';
import type { ResourceSettings } from './settings.ts';

export function routeService(route: RateLimitRoute, settings: ResourceSettings): KubeObject {
  const name = route.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: routeServiceName(name),
      namespace: route.metadata.namespace,
      labels: { ...baseLabels('portcullis-gateway', name, 'gateway'), [ROUTE_LABEL]: name },
      ownerReferences: [controllerRef(route)],
    },
    spec: {
      type: 'ClusterIP',
      selector: routeSelectorLabels(name),
      ports: [{ name: 'http', port: settings.servicePort, targetPort: 'http', protocol: 'TCP' }],
    },
  };
}
