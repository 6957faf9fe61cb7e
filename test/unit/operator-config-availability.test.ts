// The operator settings behind the route NetworkPolicy, pod priority and container resources:
// their defaults, the chart's env, and refusals that name the variable.
import { describe, expect, it } from 'vitest';
import { resourceSettings } from '../../operator/config-settings.ts';
import { loadOperatorConfig } from '../../operator/config.ts';

describe('operator settings: NetworkPolicy, priority, resources', () => {
  it('defaults: policy on, no PriorityClass, the sidecar at 50m/64Mi with a 256Mi limit, the auth server at 50m/96Mi with 384Mi', () => {
    expect(resourceSettings(loadOperatorConfig({}))).toMatchObject({
      routeNetworkPolicy: true,
      priorityClassName: undefined,
      sidecarResources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
      authServerResources: {
        requests: { cpu: '50m', memory: '96Mi' },
        limits: { memory: '384Mi' },
      },
    });
  });

  it('reads what the chart renders (toJson of the values; an empty PriorityClass is none)', () => {
    const s = resourceSettings(
      loadOperatorConfig({
        PORTCULLIS_ROUTE_NETWORK_POLICY: 'false',
        PORTCULLIS_PRIORITY_CLASS_NAME: 'gateway-high',
        PORTCULLIS_SIDECAR_RESOURCES:
          '{"limits":{"memory":"512Mi","cpu":1},"requests":{"cpu":"100m","memory":"128Mi"}}',
        PORTCULLIS_AUTH_SERVER_RESOURCES: '{"requests":{"cpu":"200m"}}',
      }),
    );
    expect(s.routeNetworkPolicy).toBe(false);
    expect(s.priorityClassName).toBe('gateway-high');
    expect(s.sidecarResources).toEqual({
      limits: { memory: '512Mi', cpu: '1' },
      requests: { cpu: '100m', memory: '128Mi' },
    });
    expect(s.authServerResources).toEqual({ requests: { cpu: '200m' } });
    expect(
      resourceSettings(
        loadOperatorConfig({
          PORTCULLIS_PRIORITY_CLASS_NAME: ' ',
          PORTCULLIS_SIDECAR_RESOURCES: '',
        }),
      ).priorityClassName,
    ).toBeUndefined();
    expect(
      resourceSettings(loadOperatorConfig({ PORTCULLIS_SIDECAR_RESOURCES: '' })).sidecarResources
        .limits,
    ).toEqual({ memory: '256Mi' });
  });

  it('also as flags', () => {
    const config = loadOperatorConfig({}, [
      '--route-network-policy',
      'no',
      '--priority-class-name=batch',
    ]);
    expect(config.PORTCULLIS_ROUTE_NETWORK_POLICY).toBe(false);
    expect(config.PORTCULLIS_PRIORITY_CLASS_NAME).toBe('batch');
  });

  it('refuses what pods could not run with, naming the variable and the problem', () => {
    expect(() => loadOperatorConfig({ PORTCULLIS_SIDECAR_RESOURCES: 'memory=256Mi' })).toThrow(
      /PORTCULLIS_SIDECAR_RESOURCES: not JSON/,
    );
    expect(() =>
      loadOperatorConfig({ PORTCULLIS_SIDECAR_RESOURCES: '{"limits":{"memory":"64Mi"}}' }),
    ).toThrow(/PORTCULLIS_SIDECAR_RESOURCES: .*below 96Mi/);
    expect(() =>
      loadOperatorConfig({
        PORTCULLIS_AUTH_SERVER_RESOURCES:
          '{"requests":{"memory":"1Gi"},"limits":{"memory":"512Mi"}}',
      }),
    ).toThrow(
      /PORTCULLIS_AUTH_SERVER_RESOURCES: requests\.memory \(1Gi\) is above limits\.memory \(512Mi\)/,
    );
    expect(() =>
      loadOperatorConfig({ PORTCULLIS_AUTH_SERVER_RESOURCES: '{"limit":{"memory":"512Mi"}}' }),
    ).toThrow(/PORTCULLIS_AUTH_SERVER_RESOURCES/);
    expect(() => loadOperatorConfig({ PORTCULLIS_PRIORITY_CLASS_NAME: 'High_Priority' })).toThrow(
      /PORTCULLIS_PRIORITY_CLASS_NAME: a PriorityClass name/,
    );
    expect(() => loadOperatorConfig({ PORTCULLIS_ROUTE_NETWORK_POLICY: 'maybe' })).toThrow(
      /PORTCULLIS_ROUTE_NETWORK_POLICY/,
    );
  });
});
