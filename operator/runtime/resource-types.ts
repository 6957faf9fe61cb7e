// The resources the operator reads and writes, with what it takes to build their REST paths.
// A static table instead of API discovery: discovery costs requests on every start and the set
// of kinds is fixed by the operator's RBAC anyway. The Portcullis kinds come from the API module,
// so the table cannot disagree with the CRDs.
import {
  GATEWAY_API_GROUP,
  GROUP,
  OAUTH_CLIENT_KIND,
  OAUTH_CLIENT_PLURAL,
  RATE_LIMIT_POLICY_KIND,
  RATE_LIMIT_POLICY_PLURAL,
  RATE_LIMIT_ROUTE_KIND,
  RATE_LIMIT_ROUTE_PLURAL,
  VERSION,
} from '../api/index.ts';

export interface ResourceType {
  readonly group: string; // '' for the core group
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

export function apiVersionOf(type: ResourceType): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

export const resourceTypes = {
  rateLimitRoute: {
    group: GROUP,
    version: VERSION,
    kind: RATE_LIMIT_ROUTE_KIND,
    plural: RATE_LIMIT_ROUTE_PLURAL,
    namespaced: true,
  },
  oauthClient: {
    group: GROUP,
    version: VERSION,
    kind: OAUTH_CLIENT_KIND,
    plural: OAUTH_CLIENT_PLURAL,
    namespaced: true,
  },
  rateLimitPolicy: {
    group: GROUP,
    version: VERSION,
    kind: RATE_LIMIT_POLICY_KIND,
    plural: RATE_LIMIT_POLICY_PLURAL,
    namespaced: true,
  },
  // Gateway API (read live by the RateLimitPolicy reconciler: the CRDs may not be installed).
  httpRoute: {
    group: GATEWAY_API_GROUP,
    version: 'v1',
    kind: 'HTTPRoute',
    plural: 'httproutes',
    namespaced: true,
  },
  gateway: {
    group: GATEWAY_API_GROUP,
    version: 'v1',
    kind: 'Gateway',
    plural: 'gateways',
    namespaced: true,
  },
  customResourceDefinition: {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    kind: 'CustomResourceDefinition',
    plural: 'customresourcedefinitions',
    namespaced: false,
  },
  deployment: {
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    plural: 'deployments',
    namespaced: true,
  },
  service: { group: '', version: 'v1', kind: 'Service', plural: 'services', namespaced: true },
  configMap: {
    group: '',
    version: 'v1',
    kind: 'ConfigMap',
    plural: 'configmaps',
    namespaced: true,
  },
  secret: { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true },
  event: { group: '', version: 'v1', kind: 'Event', plural: 'events', namespaced: true },
  lease: {
    group: 'coordination.k8s.io',
    version: 'v1',
    kind: 'Lease',
    plural: 'leases',
    namespaced: true,
  },
  networkPolicy: {
    group: 'networking.k8s.io',
    version: 'v1',
    kind: 'NetworkPolicy',
    plural: 'networkpolicies',
    namespaced: true,
  },
  namespace: {
    group: '',
    version: 'v1',
    kind: 'Namespace',
    plural: 'namespaces',
    namespaced: false,
  },
  podDisruptionBudget: {
    group: 'policy',
    version: 'v1',
    kind: 'PodDisruptionBudget',
    plural: 'poddisruptionbudgets',
    namespaced: true,
  },
} as const satisfies Record<string, ResourceType>;

const byApiVersionKind = new Map<string, ResourceType>(
  Object.values(resourceTypes).map((t) => [`${apiVersionOf(t)}/${t.kind}`, t]),
);

/** The ResourceType of an object by its apiVersion and kind; throws for a kind the operator never touches. */
export function resourceTypeOf(apiVersion: string, kind: string): ResourceType {
  const type = byApiVersionKind.get(`${apiVersion}/${kind}`);
  if (type === undefined) throw new Error(`unknown resource ${apiVersion} ${kind}`);
  return type;
}

/** REST path of a collection or one object, e.g. /apis/apps/v1/namespaces/ns/deployments/name. */
export function resourcePath(
  type: ResourceType,
  namespace: string | undefined,
  name?: string,
  subresource?: string,
): string {
  const root = type.group === '' ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  const ns =
    type.namespaced && namespace !== undefined
      ? `/namespaces/${encodeURIComponent(namespace)}`
      : '';
  const one = name === undefined ? '' : `/${encodeURIComponent(name)}`;
  const sub = subresource === undefined ? '' : `/${subresource}`;
  return `${root}${ns}/${type.plural}${one}${sub}`;
}
