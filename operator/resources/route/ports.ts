// The sidecar shares the pod's network namespace with the target: its ports must differ from the
// target's. Preferred ports come from the settings; a collision moves the sidecar's port up. A
// spec.upstream gateway pod has no target container (targetPort undefined): nothing to avoid.
import type { RateLimitRoute } from '../../api/index.ts';
import type { ResourceSettings } from '../shared/settings.ts';

export interface SidecarPorts {
  proxy: number;
  admin: number;
}

/** The sidecar's ports in a route's pods: beside spec.target's or spec.targetRef's container, or alone (spec.upstream). */
export function routeSidecarPorts(
  route: RateLimitRoute,
  settings: Pick<ResourceSettings, 'sidecarPort' | 'sidecarAdminPort'>,
): SidecarPorts {
  return sidecarPorts(route.spec.target?.port ?? route.spec.targetRef?.port, settings);
}

export function sidecarPorts(
  targetPort: number | undefined,
  settings: Pick<ResourceSettings, 'sidecarPort' | 'sidecarAdminPort'>,
): SidecarPorts {
  const taken = new Set(targetPort === undefined ? [] : [targetPort]);
  const pick = (preferred: number): number => {
    let p = preferred;
    while (taken.has(p)) p = p >= 65535 ? 1024 : p + 1;
    taken.add(p);
    return p;
  };
  const proxy = pick(settings.sidecarPort);
  const admin = pick(settings.sidecarAdminPort);
  return { proxy, admin };
}
