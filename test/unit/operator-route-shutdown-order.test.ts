// A route pod that stops must fail no request: the target container has to outlive the sidecar's
// preStop pause and its drain of in-flight requests, or the sidecar forwards to a stopped target
// (seen on a real cluster: about 5 s of 502s on every roll). The e2e tier measures the outcome;
// this pins the rendered timings against the sidecar's own default drain.
import { describe, expect, it } from 'vitest';
import { parseSidecarConfigText } from '../../lib/config/sidecar.ts';
import { renderSidecarConfig } from '../../operator/resources/route/config-map.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { route, settings } from './operator-fixtures.ts';

interface PodSpec {
  terminationGracePeriodSeconds: number;
  containers: Array<{ name: string; lifecycle?: { preStop?: { sleep?: { seconds: number } } } }>;
}

function render(): { pod: PodSpec; drainSeconds: number } {
  const text = renderSidecarConfig(route(), settings);
  const dep = routeDeployment(route(), settings, text) as unknown as {
    spec: { template: { spec: PodSpec } };
  };
  return {
    pod: dep.spec.template.spec,
    drainSeconds: parseSidecarConfigText(text).shutdownGraceMs / 1000,
  };
}

const preStop = (pod: PodSpec, name: string) =>
  pod.containers.find((c) => c.name === name)?.lifecycle?.preStop?.sleep?.seconds;

describe('route pod shutdown order', () => {
  it('the sidecar pauses before SIGTERM so endpoints drop the pod while it still serves', () => {
    expect(preStop(render().pod, 'sidecar')).toBeGreaterThanOrEqual(5);
  });

  it('the target pauses until the sidecar has paused and drained (its rendered shutdownGraceMs)', () => {
    const { pod, drainSeconds } = render();
    expect(preStop(pod, 'target')).toBeGreaterThanOrEqual(preStop(pod, 'sidecar')! + drainSeconds);
  });

  it('the pod grace leaves the target time to stop after its pause', () => {
    const { pod } = render();
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(preStop(pod, 'target')!);
  });
});
