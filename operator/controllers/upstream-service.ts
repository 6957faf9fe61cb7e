// spec.upstream's Service, read live (the caches watch only the operator's own objects): its
// selector names the pods the upstream NetworkPolicy closes to everyone but the gateway, and its
// type decides whether the route may forward to it at all.
import type { RateLimitRoute } from '../api/index.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { asRecord } from '../runtime/kube-object.ts';
import { resourceTypes } from '../runtime/resource-types.ts';

/** How often a route whose upstream Service is missing or has no selector looks again, ms (its changes wake no informer). */
export const UPSTREAM_POLL_MS = 60_000;

export type UpstreamService =
  /** The pods behind the Service, by its selector. */
  | { kind: 'selector'; selector: Record<string, string> }
  /** Not there (yet), or without a selector (its endpoints are kept by hand): no pods to protect; `message` says so. */
  | { kind: 'unprotected'; message: string }
  /** The route must not forward to it; `message` says why and what to do. */
  | { kind: 'refused'; message: string };

export async function readUpstreamService(
  client: KubeClient,
  route: RateLimitRoute,
): Promise<UpstreamService | undefined> {
  const upstream = route.spec.upstream;
  if (upstream === undefined) return undefined;
  const namespace = route.metadata.namespace ?? 'default';
  const name = upstream.service.name;
  const service = await client.get(resourceTypes.service, namespace, name);
  if (service === undefined) {
    return {
      kind: 'unprotected',
      message: `spec.upstream.service ${name} does not exist in namespace ${namespace}; the gateway answers 502 and no NetworkPolicy covers its pods until it does`,
    };
  }
  const spec = asRecord(service['spec']);
  // An ExternalName Service is a DNS alias to any host, inside the cluster or out: a gateway of
  // this namespace would carry the route's traffic (and its verified USER-ID) wherever it points.
  if (spec?.['type'] === 'ExternalName') {
    return {
      kind: 'refused',
      message: `spec.upstream.service ${name} is an ExternalName Service, which a route does not forward to (it aliases a host outside the namespace); point the route at a Service that selects pods of this namespace`,
    };
  }
  const selector = Object.entries(asRecord(spec?.['selector']) ?? {}).filter(
    (e): e is [string, string] => typeof e[1] === 'string',
  );
  if (selector.length === 0) {
    return {
      kind: 'unprotected',
      message: `spec.upstream.service ${name} has no selector, so no NetworkPolicy can name its pods: they stay reachable around the limiter`,
    };
  }
  return { kind: 'selector', selector: Object.fromEntries(selector) };
}
