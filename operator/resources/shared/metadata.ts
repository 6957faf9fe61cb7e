// Labels, names and owner references shared by every child object.
import {
  GROUP,
  OAUTH_CLIENT_KIND,
  RATE_LIMIT_POLICY_KIND,
  RATE_LIMIT_ROUTE_KIND,
} from '../../api/index.ts';
import type { KubeObject, OwnerReference } from '../../runtime/kube-object.ts';
import { AUTH_SERVER_NAME } from '../auth/names.ts';

export const MANAGED_BY = 'portcullis-operator';
/** Label selector of every object the operator creates (its informers watch only these). */
export const MANAGED_SELECTOR = `app.kubernetes.io/managed-by=${MANAGED_BY}`;
export const ROUTE_LABEL = 'portcullis.dev/route';
export const OAUTH_CLIENT_LABEL = 'portcullis.dev/oauth-client';
export const COMPONENT_LABEL = 'app.kubernetes.io/component';
/**
 * On every pod that runs a Portcullis sidecar: the operator's route pods and a team's pods that
 * spec.targetRef injected one into. The latter keep the team's labels and carry none of the
 * gateway's, so what must reach or watch every sidecar (the bundled Redis's NetworkPolicy, the
 * chart's sidecar PodMonitor) selects on this one label.
 */
export const SIDECAR_POD_LABEL = 'portcullis.dev/sidecar';
export const SIDECAR_POD_LABELS: Readonly<Record<string, string>> = { [SIDECAR_POD_LABEL]: 'true' };
/** The labels spec.targetRef puts on a team's pods: what the route's NetworkPolicy selects. */
export const injectedPodLabels = (routeName: string): Record<string, string> => ({
  ...SIDECAR_POD_LABELS,
  [ROUTE_LABEL]: routeName,
});
/** Pod-template annotation: hash of the mounted config; a new value rolls the pods. */
export const CONFIG_HASH_ANNOTATION = 'portcullis.dev/config-hash';

export interface Owner {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string | undefined; uid?: string | undefined };
}

/** The controller reference (garbage collection deletes the child with its owner). */
export function controllerRef(owner: Owner): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** A non-controller reference: the child lives as long as any of its owners. */
export function ownerRef(owner: Owner): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid ?? '',
  };
}

/** Owner references of an object several own, by name: the same owners always render alike (no spurious apply). */
export function sortedOwnerRefs(owners: readonly Owner[]): OwnerReference[] {
  return [...owners].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1)).map(ownerRef);
}

export function baseLabels(
  name: string,
  instance: string,
  component: string,
): Record<string, string> {
  return {
    'app.kubernetes.io/name': name,
    'app.kubernetes.io/instance': instance,
    [COMPONENT_LABEL]: component,
    'app.kubernetes.io/managed-by': MANAGED_BY,
    'app.kubernetes.io/part-of': 'portcullis',
  };
}

/** A route's child: the gateway's labels and the route's name (what the route's informers map back by). */
export function routeLabels(route: string, component = 'gateway'): Record<string, string> {
  return { ...baseLabels('portcullis-gateway', route, component), [ROUTE_LABEL]: route };
}

/** What selects a route's own pods (its Deployment, Service, budget and policies). */
export function routeSelectorLabels(route: string): Record<string, string> {
  return { 'app.kubernetes.io/name': 'portcullis-gateway', 'app.kubernetes.io/instance': route };
}

/** What selects the auth server's pods. */
export function authServerSelectorLabels(): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'portcullis-auth-server',
    'app.kubernetes.io/instance': AUTH_SERVER_NAME,
  };
}

/** An object of a namespace's auth server. */
export function authServerLabels(component: string): Record<string, string> {
  return baseLabels('portcullis-auth-server', AUTH_SERVER_NAME, component);
}

/** The controller owner of a child, if it is of the given kind. */
export function controllerOf(child: KubeObject, kind: string): OwnerReference | undefined {
  return child.metadata.ownerReferences?.find((r) => r.controller === true && r.kind === kind);
}

/**
 * Whether a Portcullis object (a RateLimitRoute, RateLimitPolicy or OAuthClient) owns this one: what the
 * operator's caches keep. The managed-by label alone proves nothing, anyone can set it.
 */
export function ownedByPortcullis(obj: KubeObject): boolean {
  return (
    obj.metadata.ownerReferences?.some(
      (r) => r.apiVersion.startsWith(`${GROUP}/`) && PORTCULLIS_OWNER_KINDS.has(r.kind),
    ) ?? false
  );
}
const PORTCULLIS_OWNER_KINDS: ReadonlySet<string> = new Set([
  RATE_LIMIT_ROUTE_KIND,
  OAUTH_CLIENT_KIND,
  RATE_LIMIT_POLICY_KIND,
]);

/** Hardened container security context: non-root, read-only root filesystem, no capabilities. */
export const containerSecurityContext = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

export const podSecurityContext = {
  runAsNonRoot: true,
  runAsUser: 1000,
  runAsGroup: 1000,
  fsGroup: 1000,
  seccompProfile: { type: 'RuntimeDefault' },
};

export function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

export function fromBase64(data: unknown): string | undefined {
  return typeof data === 'string' ? Buffer.from(data, 'base64').toString('utf8') : undefined;
}
