// RateLimitRoute -> Service in front of the sidecars (never the target directly): `http` to the
// proxy and `metrics` to the sidecars' admin port (/metrics), for a ServiceMonitor.
import type { V1Service } from '@kubernetes/client-node';
import type { RateLimitRoute } from '../../api/index.ts';
import type { KubeObject } from '../../runtime/kube-object.ts';
import { controllerRef, routeLabels, routeSelectorLabels } from '../shared/metadata.ts';
import type { ResourceSettings } from '../shared/settings.ts';

export function routeService(route: RateLimitRoute, settings: ResourceSettings): KubeObject {
  const name = route.metadata.name;
  // Two ports of one Service cannot share a number.
  const metricsPort =
    settings.sidecarAdminPort === settings.servicePort
      ? settings.sidecarAdminPort + 1
      : settings.sidecarAdminPort;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name, // the route id
      namespace: route.metadata.namespace,
      labels: routeLabels(name),
      ownerReferences: [controllerRef(route)],
    },
    spec: {
      type: 'ClusterIP',
      selector: routeSelectorLabels(name),
      ports: [
        { name: 'http', port: settings.servicePort, targetPort: 'http', protocol: 'TCP' },
        // By name: the sidecar's admin port moves up when the target's port takes it (ports.ts).
        { name: 'metrics', port: metricsPort, targetPort: 'admin', protocol: 'TCP' },
      ],
    },
  } satisfies V1Service;
}
