// Every pod that runs a Portcullis sidecar carries one common label: the operator's route pods
// (beside a target, or alone in front of an upstream Service) and a team's pods that spec.targetRef
// injected a sidecar into, which also get the route label. What must reach or scrape every sidecar
// (the bundled Redis's NetworkPolicy, the chart's PodMonitor) selects on it: the injected pods
// carry none of the gateway labels, and before this label they were cut off from the bundled Redis
// and never scraped.
import { describe, expect, it } from 'vitest';
import { rateLimitRouteSchema } from '../../operator/api/index.ts';
import {
  ROUTE_LABEL,
  SIDECAR_POD_LABEL,
  SIDECAR_POD_LABELS,
} from '../../operator/resources/shared/metadata.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import {
  injectedSidecar,
  INJECTED_CONTAINER,
  INJECTED_PORTS,
} from '../../operator/resources/route/injection.ts';
import { routeObject, settings } from './operator-fixtures.ts';

type Pod = {
  metadata: { labels: Record<string, string> };
  spec: { containers: Array<{ name: string; ports: Array<{ name: string }> }> };
};
const podOf = (dep: unknown) => (dep as { spec: { template: Pod } }).spec.template;
const routeWith = (spec: Record<string, unknown>) => {
  const raw = routeObject('shop');
  return rateLimitRouteSchema.parse({
    ...raw,
    spec: { path: '/**', limiter: { replenishRate: 1, burstCapacity: 10 }, ...spec },
  });
};

describe('the label of every pod running a sidecar', () => {
  it('is portcullis.dev/sidecar=true', () => {
    // The chart spells it out (redis.yaml, monitoring.yaml): test/k8s/chart*.test.ts tie them.
    expect(SIDECAR_POD_LABELS).toEqual({ [SIDECAR_POD_LABEL]: 'true' });
    expect(SIDECAR_POD_LABEL).toBe('portcullis.dev/sidecar');
  });

  it("is on the operator's route pods, with a target and in front of an upstream Service", () => {
    for (const spec of [
      { target: { image: 'example/web:1.0', port: 8081 } },
      { upstream: { service: { name: 'web', port: 8081 } } },
    ]) {
      const pod = podOf(routeDeployment(routeWith(spec), settings, 'listen: {}'));
      expect(pod.metadata.labels).toMatchObject({
        ...SIDECAR_POD_LABELS,
        [ROUTE_LABEL]: 'shop',
        'app.kubernetes.io/name': 'portcullis-gateway',
      });
    }
  });

  it('is in the pod template the sidecar field manager applies to a team Deployment, with the route label and no gateway label', () => {
    const pod = podOf(
      injectedSidecar(
        routeWith({ targetRef: { name: 'web', port: 8081 } }),
        settings,
        'listen: {}',
      ),
    );
    expect(pod.metadata.labels).toEqual({ ...SIDECAR_POD_LABELS, [ROUTE_LABEL]: 'shop' });
    // The sidecar's admin port there is rlr-admin (the chart's PodMonitor has an endpoint for each name).
    expect(pod.spec.containers.map((c) => [c.name, c.ports.map((p) => p.name)])).toEqual([
      [INJECTED_CONTAINER, [INJECTED_PORTS.http, INJECTED_PORTS.admin]],
    ]);
  });
});
