// The ExternalAuth filter (Gateway API, GEP-1494; experimental channel) a RateLimitPolicy puts on
// the HTTPRoute rules it targets: gRPC ext_authz to the policy's decision Service (gRPC carries
// every request header, the key header included; the HTTP form sends only a few unless listed).
//
// HTTPRoute's rules and filters are atomic lists: a second server-side apply manager would own
// the whole list and take the team's own entries from them. So the operator edits a copy of the
// route read live and writes it back with its resourceVersion (a concurrent change is a 409 and a
// retry), touching only filters it recognises as its own: type ExternalAuth, backendRef the
// policy's Service in the route's namespace.
import { asRecord, type KubeObject } from '../runtime/kube-object.ts';

export interface ExternalAuthBackend {
  /** The decision Service, in the route's (and policy's) namespace. */
  service: string;
  /** Its gRPC port. */
  port: number;
}

/** The filter as the API server stores it (defaults written out, so a stored copy compares equal). */
export function externalAuthFilter(backend: ExternalAuthBackend): Record<string, unknown> {
  return {
    type: 'ExternalAuth',
    externalAuth: {
      protocol: 'GRPC',
      backendRef: { group: '', kind: 'Service', name: backend.service, port: backend.port },
      grpc: {},
    },
  };
}

/** Whether a filter is the policy's: ExternalAuth to its Service (any port), no namespace (the route's own). */
export function isPolicyFilter(filter: unknown, service: string): boolean {
  const f = asRecord(filter);
  if (f?.['type'] !== 'ExternalAuth') return false;
  const ref = asRecord(asRecord(f['externalAuth'])?.['backendRef']);
  return (
    ref !== undefined &&
    ref['name'] === service &&
    (ref['group'] ?? '') === '' &&
    (ref['kind'] ?? 'Service') === 'Service' &&
    ref['namespace'] === undefined
  );
}

/** Which rules of a route should carry the filter: every rule, the rules of these names, or none. */
export type WantedRules = 'all' | ReadonlySet<string> | undefined;

function ruleWanted(rule: Record<string, unknown>, wanted: WantedRules): boolean {
  if (wanted === undefined) return false;
  if (wanted === 'all') return true;
  const name = rule['name'];
  return typeof name === 'string' && wanted.has(name);
}

/** The rule's filters with the policy's filter kept or added once (wanted) or removed; other filters as they were, in order. */
function ruleFilters(
  filters: readonly unknown[],
  backend: ExternalAuthBackend,
  want: boolean,
): unknown[] {
  const desired = externalAuthFilter(backend);
  let placed = false;
  const out: unknown[] = [];
  for (const f of filters) {
    if (!isPolicyFilter(f, backend.service)) out.push(f);
    else if (want && !placed) {
      out.push(desired);
      placed = true;
    }
  }
  if (want && !placed) out.push(desired);
  return out;
}

/**
 * The route with the policy's filter on exactly the wanted rules, or undefined when it already is
 * so (nothing to write). Nothing else of the route changes.
 */
export function routeWithFilters(
  route: KubeObject,
  backend: ExternalAuthBackend,
  wanted: WantedRules,
): KubeObject | undefined {
  const spec = asRecord(route['spec']);
  const rules = spec?.['rules'];
  if (spec === undefined || !Array.isArray(rules)) return undefined;
  let changed = false;
  const next = rules.map((r: unknown) => {
    const rule = asRecord(r) ?? {};
    const filters = Array.isArray(rule['filters']) ? (rule['filters'] as unknown[]) : [];
    const out = ruleFilters(filters, backend, ruleWanted(rule, wanted));
    if (JSON.stringify(out) === JSON.stringify(filters)) return r;
    changed = true;
    const { filters: _old, ...rest } = rule;
    return out.length === 0 ? rest : { ...rest, filters: out };
  });
  return changed ? { ...route, spec: { ...spec, rules: next } } : undefined;
}

/** Whether any rule of the route carries the policy's filter. */
export function routeHasPolicyFilter(route: KubeObject, service: string): boolean {
  const rules = asRecord(route['spec'])?.['rules'];
  if (!Array.isArray(rules)) return false;
  return rules.some((r: unknown) => {
    const filters = asRecord(r)?.['filters'];
    return Array.isArray(filters) && filters.some((f) => isPolicyFilter(f, service));
  });
}

/** Whether an HTTPRoute CRD (as read from apiextensions) offers the ExternalAuth filter type. */
export function crdHasExternalAuth(crd: KubeObject | undefined): boolean {
  if (crd === undefined) return false;
  const versions = asRecord(crd['spec'])?.['versions'];
  if (!Array.isArray(versions)) return false;
  return versions.some((v: unknown) => {
    const version = asRecord(v);
    if (version?.['name'] !== 'v1' || version['served'] !== true) return false;
    const path = [
      'schema',
      'openAPIV3Schema',
      'properties',
      'spec',
      'properties',
      'rules',
      'items',
      'properties',
      'filters',
      'items',
      'properties',
      'type',
    ];
    const filterType = path.reduce<unknown>((node, key) => asRecord(node)?.[key], version);
    const values = asRecord(filterType)?.['enum'];
    return Array.isArray(values) && values.includes('ExternalAuth');
  });
}
