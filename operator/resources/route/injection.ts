// RateLimitRoute spec.targetRef -> the sidecar added to a Deployment a team already runs (its
// chart keeps managing everything else). The operator applies a partial Deployment under a field
// manager of its own, so server-side apply gives it exactly these fields: the sidecar container,
// its volumes, the pod-template config hash (a new config rolls the pods, as for a target) and two
// pod-template labels: the one every sidecar pod carries (the bundled Redis admits and the chart's
// PodMonitor scrapes by it) and the route's (metrics name the route by it).
// The team's apply or update of its own fields never removes them and the operator's never touches
// the team's; applying the empty partial object (releasedSidecar) removes exactly what it added.
//
// Everything the sidecar brings is renamed with a portcullis- prefix (container, volumes) or
// rlr- (ports: a pod's port names must be unique, at most 15 characters), so nothing collides with
// the team's pod. The team's container gets no preStop pause: a roll of such a Deployment can fail
// the requests in flight on the team's side that a target route's shutdown order would save.
import type { RateLimitRoute } from '../../api/index.ts';
import { InvalidSpecError } from '../../runtime/errors.ts';
import { asRecord, type KubeObject } from '../../runtime/kube-object.ts';
import { CONFIG_HASH_ANNOTATION, injectedPodLabels, ROUTE_LABEL } from '../shared/metadata.ts';
import { routeDeployment } from './deployment.ts';
import { routeSidecarPorts } from './ports.ts';
import { routeService } from './service.ts';
import type { ResourceSettings } from '../shared/settings.ts';

/** Owns the injected fields of a team's Deployment (and nothing else). */
export const SIDECAR_FIELD_MANAGER = 'portcullis-operator-sidecar';
/** On a targetRef route while its sidecar may be in the team's Deployment: deletion waits for its removal. */
export const INJECTION_FINALIZER = 'portcullis.dev/injected-sidecar';
export const INJECTED_CONTAINER = 'portcullis-sidecar';
const VOLUME_PREFIX = 'portcullis-';
/** Port names of the injected container, as the route's Service targets them. */
export const INJECTED_PORTS = { http: 'rlr-http', admin: 'rlr-admin' } as const;

type Json = Record<string, unknown>;
const list = (v: unknown): Json[] =>
  Array.isArray(v) ? v.filter((e): e is Json => asRecord(e) !== undefined) : [];

/** Renames the port names `http`/`admin` wherever a probe or port refers to them. */
function renamePorts(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(renamePorts);
  const record = asRecord(value);
  if (record === undefined) return value;
  return Object.fromEntries(
    Object.entries(record).map(([k, v]) => {
      if ((k === 'port' || k === 'name') && (v === 'http' || v === 'admin'))
        return [k, INJECTED_PORTS[v]];
      return [k, renamePorts(v)];
    }),
  );
}

/** The partial Deployment (apply configuration) that adds the sidecar to spec.targetRef's Deployment. */
export function injectedSidecar(
  route: RateLimitRoute,
  settings: ResourceSettings,
  sidecarConfigText: string,
): KubeObject {
  const ref = route.spec.targetRef;
  if (ref === undefined) throw new InvalidSpecError('spec.targetRef is not set');
  // The sidecar exactly as the route's own Deployment would run it (resources, heap caps, probes, mounts).
  const own = asRecord(
    asRecord(routeDeployment(route, settings, sidecarConfigText)['spec'])?.['template'],
  );
  const pod = asRecord(own?.['spec']);
  const [sidecar] = list(pod?.['containers']);
  const prefixed = (items: unknown) =>
    list(items).map((v): Json => ({ ...v, name: `${VOLUME_PREFIX}${String(v['name'])}` }));
  // The team's pod sets its own fsGroup, or none: a Secret file only group-readable (as in the
  // route's own pods, whose fsGroup is the sidecar's group) would be unreadable to the sidecar.
  // Only the sidecar container mounts these volumes, so readable by all means by the sidecar alone.
  const volumes = prefixed(pod?.['volumes']).map((v) => {
    const secret = asRecord(v['secret']);
    return secret === undefined ? v : { ...v, secret: { ...secret, defaultMode: 0o444 } };
  });
  const container = {
    ...(renamePorts(sidecar) as Json),
    name: INJECTED_CONTAINER,
    volumeMounts: prefixed(sidecar?.['volumeMounts']),
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: ref.name, namespace: route.metadata.namespace },
    spec: {
      template: {
        metadata: {
          // Not the gateway's labels: app.kubernetes.io/name and instance are the team chart's own (often its selector).
          labels: injectedPodLabels(route.metadata.name),
          annotations: {
            [CONFIG_HASH_ANNOTATION]: String(
              asRecord(asRecord(own?.['metadata'])?.['annotations'])?.[CONFIG_HASH_ANNOTATION],
            ),
          },
        },
        spec: { containers: [container], volumes },
      },
    },
  };
}

/**
 * The route whose sidecar the Deployment's pods carry (their portcullis.dev/route label), if any.
 * One Deployment takes one route's sidecar: two would take turns rewriting it, rolling the pods
 * forever, and deleting one would remove the other's (both write as SIDECAR_FIELD_MANAGER).
 */
export function injectedBy(live: KubeObject): string | undefined {
  const labels = asRecord(
    asRecord(asRecord(asRecord(live['spec'])?.['template'])?.['metadata'])?.['labels'],
  );
  const route = labels?.[ROUTE_LABEL];
  return typeof route === 'string' ? route : undefined;
}

/** Applied by SIDECAR_FIELD_MANAGER, it owns nothing any more: the API server removes what it had added. */
export function releasedSidecar(route: RateLimitRoute | KubeObject, name: string): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: route.metadata.namespace },
  };
}

/**
 * Why the sidecar cannot go into this Deployment, or undefined. Its pods must be selectable by a
 * Service (matchLabels only) and no container of the team may already listen on the sidecar's ports.
 */
export function injectionProblem(
  route: RateLimitRoute,
  settings: ResourceSettings,
  live: KubeObject,
): string | undefined {
  const name = live.metadata.name;
  const selector = asRecord(asRecord(live['spec'])?.['selector']);
  if (
    selector?.['matchExpressions'] !== undefined ||
    asRecord(selector?.['matchLabels']) === undefined
  ) {
    return `Deployment ${name} selects its pods with matchExpressions (or no matchLabels), which a Service cannot; give it a matchLabels selector`;
  }
  const ports = routeSidecarPorts(route, settings);
  const podSpec = asRecord(asRecord(asRecord(live['spec'])?.['template'])?.['spec']);
  for (const c of list(podSpec?.['containers'])) {
    if (c['name'] === INJECTED_CONTAINER) continue;
    for (const p of list(c['ports'])) {
      if (p['containerPort'] === ports.proxy || p['containerPort'] === ports.admin) {
        return `container ${String(c['name'])} of Deployment ${name} declares port ${String(p['containerPort'])}, which the sidecar needs (proxy ${ports.proxy}, admin ${ports.admin}); the operator's PORTCULLIS_SIDECAR_PORT and PORTCULLIS_SIDECAR_ADMIN_PORT choose others`;
      }
    }
  }
  return undefined;
}

/** The route's Service, selecting the team's pods and sending to the injected sidecar's ports. */
export function injectionService(
  route: RateLimitRoute,
  settings: ResourceSettings,
  live: KubeObject,
): KubeObject {
  const svc = routeService(route, settings);
  const spec = asRecord(svc['spec']) ?? {};
  const matchLabels =
    asRecord(asRecord(asRecord(live['spec'])?.['selector'])?.['matchLabels']) ?? {};
  const ports = list(spec['ports']).map((p) => ({
    ...p,
    targetPort:
      p['targetPort'] === 'http' || p['targetPort'] === 'admin'
        ? INJECTED_PORTS[p['targetPort']]
        : p['targetPort'],
  }));
  return { ...svc, spec: { ...spec, selector: { ...matchLabels }, ports } };
}
