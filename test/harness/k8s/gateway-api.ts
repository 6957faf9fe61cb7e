// Gateway API's CRD manifests, from the sigs.k8s.io/gateway-api module (gateway-api-crds.sh caches
// them): the three kinds a RateLimitPolicy reads, in one channel, for `kubectl apply -f` each.
import path from 'node:path';
import { printedPath } from '../printed-path.ts';

/** GatewayClass, Gateway and HTTPRoute: standard (no ExternalAuth filter) or experimental (with it). */
export function gatewayApiCrdFiles(channel: 'standard' | 'experimental'): string[] {
  const dir = printedPath('test/harness/k8s/gateway-api-crds.sh', 'GATEWAY_API_CRDS');
  return ['gatewayclasses', 'gateways', 'httproutes'].map((kind) =>
    path.join(dir, channel, `gateway.networking.k8s.io_${kind}.yaml`),
  );
}
