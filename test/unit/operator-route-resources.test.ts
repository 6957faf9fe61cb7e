import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseSidecarConfigText } from '../../lib/config/sidecar.ts';
import { CONFIG_HASH_ANNOTATION } from '../../operator/resources/shared/metadata.ts';
import { renderSidecarConfig, routeConfigMap } from '../../operator/resources/route/config-map.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { sidecarPorts } from '../../operator/resources/route/ports.ts';
import { routeService } from '../../operator/resources/route/service.ts';
import { serviceNameProblem } from '../../operator/resources/route/names.ts';
import { route, settings } from './operator-fixtures.ts';

interface Container {
  name: string;
  command?: string[];
  args?: string[];
  ports: Array<{ name: string; containerPort: number }>;
  env?: Array<{ name: string; value?: string }>;
  securityContext: Record<string, unknown>;
  readinessProbe?: unknown;
  livenessProbe?: unknown;
  resources?: unknown;
  volumeMounts?: Array<{ mountPath: string; readOnly?: boolean }>;
}

function containers(dep: Record<string, unknown>): Container[] {
  return (dep as { spec: { template: { spec: { containers: Container[] } } } }).spec.template.spec
    .containers;
}

describe('RateLimitRoute -> children', () => {
  it('renders a sidecar config the sidecar itself accepts, with the route limits', () => {
    const text = renderSidecarConfig(route(), settings);
    const config = parseSidecarConfigText(text);
    expect(config.limiter).toMatchObject({
      replenishRate: 1,
      burstCapacity: 10,
      requestedTokens: 2,
      keyHeader: 'USER-ID',
      onStoreError: 'allow',
    });
    expect(config.route).toEqual({
      id: 'all',
      path: '/**',
      mergeSlashes: true,
      caseInsensitivePaths: false,
    });
    expect(config.upstream?.url).toBe('http://127.0.0.1:8081');
    expect(config.redis?.url).toBe('redis://redis:6379');
    expect(config.listen.port).toBe(8080);
    expect(config.admin.port).toBe(9090);
  });

  it('a route Redis URL wins over the default; no Redis at all leaves the sidecar in memory', () => {
    expect(
      parseSidecarConfigText(
        renderSidecarConfig(route('all', { redis: { url: 'redis://other:6380' } }), settings),
      ).redis?.url,
    ).toBe('redis://other:6380');
    expect(
      parseSidecarConfigText(
        renderSidecarConfig(route(), { ...settings, defaultRedisUrl: undefined }),
      ).redis,
    ).toBeUndefined();
  });

  it('spec.redis.secretRef: the sidecar reads the URL from the mounted key (redis.urlFile), not the default URL', () => {
    expect(
      parseSidecarConfigText(
        renderSidecarConfig(
          route('all', { redis: { secretRef: { name: 's', key: 'url' } } }),
          settings,
        ),
      ).redis,
    ).toMatchObject({
      urlFile: '/etc/portcullis/redis/url',
    });
    expect(
      parseSidecarConfigText(
        renderSidecarConfig(
          route('all', { redis: { secretRef: { name: 's', key: 'url' } } }),
          settings,
        ),
      ).redis?.url,
    ).toBeUndefined();
  });

  it('moves the sidecar ports off the target port', () => {
    expect(sidecarPorts(8080, settings)).toEqual({ proxy: 8081, admin: 9090 });
    expect(sidecarPorts(9090, settings)).toEqual({ proxy: 8080, admin: 9091 });
  });

  it('ConfigMap, Deployment and Service carry a controller ownerReference to the route', () => {
    const r = route();
    const cm = routeConfigMap(r, settings);
    const dep = routeDeployment(r, settings, 'x');
    const svc = routeService(r, settings);
    for (const child of [cm, dep, svc]) {
      expect(child.metadata.namespace).toBe('team-a');
      expect(child.metadata.ownerReferences).toEqual([
        {
          apiVersion: 'portcullis.dev/v1alpha1',
          kind: 'RateLimitRoute',
          name: 'all',
          uid: 'uid-all',
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(child.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('portcullis-operator');
    }
    expect(cm.metadata.name).toBe('all-sidecar');
  });

  it('Deployment: target + sidecar with the image entry contract, probes, resources, non-root, read-only root, config mounted', () => {
    const dep = routeDeployment(route(), settings, renderSidecarConfig(route(), settings));
    const [target, sidecar] = containers(dep);
    expect(target?.name).toBe('target');
    expect(target?.command).toEqual(['node', 'services/user-service/main.ts']);
    expect(target?.ports).toEqual([{ name: 'target', containerPort: 8081, protocol: 'TCP' }]);
    expect(target?.readinessProbe).toMatchObject({
      httpGet: { path: '/healthcheck/ready', port: 8081 },
    });
    expect(sidecar?.name).toBe('sidecar');
    expect(sidecar?.command).toEqual(['node', 'dist/sidecar/main.mjs']);
    // The V8 and allocator caps that bound the sidecar's memory under load reach the container.
    expect(sidecar?.env).toEqual(
      expect.arrayContaining([
        {
          name: 'NODE_OPTIONS',
          value: expect.stringMatching(/--max-semi-space-size=\d+ --max-old-space-size=\d+/),
        },
        { name: 'MALLOC_ARENA_MAX', value: '2' },
      ]),
    );
    expect(sidecar?.args).toEqual(['--config', '/etc/portcullis/sidecar/config.yaml']);
    expect(sidecar?.ports.map((p) => [p.name, p.containerPort])).toEqual([
      ['http', 8080],
      ['admin', 9090],
    ]);
    expect(sidecar?.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 'admin' } });
    expect(sidecar?.livenessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'admin' } });
    expect(sidecar?.resources).toMatchObject({
      requests: { cpu: '50m', memory: '64Mi' },
      limits: { memory: '256Mi' },
    });
    expect(sidecar?.volumeMounts).toContainEqual({
      name: 'sidecar-config',
      mountPath: '/etc/portcullis/sidecar',
      readOnly: true,
    });
    for (const c of [target, sidecar]) {
      expect(c?.securityContext).toMatchObject({
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
    }
    expect((dep['spec'] as { replicas: number }).replicas).toBe(2);
  });

  it('a spec change changes the pod template (config hash), so the pods roll', () => {
    const hashOf = (r: ReturnType<typeof route>) => {
      const dep = routeDeployment(r, settings, renderSidecarConfig(r, settings)) as unknown as {
        spec: { template: { metadata: { annotations: Record<string, string> } } };
      };
      return dep.spec.template.metadata.annotations[CONFIG_HASH_ANNOTATION];
    };
    const before = hashOf(route());
    expect(hashOf(route())).toBe(before);
    expect(
      hashOf(
        route('all', { limiter: { replenishRate: 5, burstCapacity: 10, requestedTokens: 2 } }),
      ),
    ).not.toBe(before);
  });

  it('target quantities are rendered as strings (as the API server returns them)', () => {
    const r = route('all', {});
    r.spec.target!.resources = { limits: { cpu: 1, memory: '128Mi' } };
    const [target] = containers(routeDeployment(r, settings, 'x'));
    expect(target?.resources).toEqual({ limits: { cpu: '1', memory: '128Mi' } });
  });

  it('Service: the route name, selecting the pods, port 80 -> the sidecar port name, metrics -> its admin port name', () => {
    const svc = routeService(route(), settings) as unknown as {
      metadata: { name: string };
      spec: { selector: Record<string, string>; ports: unknown[] };
    };
    expect(svc.metadata.name).toBe('all');
    expect(svc.spec.selector).toEqual({
      'app.kubernetes.io/name': 'portcullis-gateway',
      'app.kubernetes.io/instance': 'all',
    });
    expect(svc.spec.ports).toEqual([
      { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' },
      { name: 'metrics', port: 9090, targetPort: 'admin', protocol: 'TCP' },
    ]);
    // The names resolve to the sidecar's container ports, wherever the target's port moved them.
    const sidecar = containers(
      routeDeployment(route('all', { target: { image: 'x', port: 9090 } }), settings, 'x'),
    ).find((c) => c.name === 'sidecar');
    expect(sidecar?.ports.map((p) => p.name)).toEqual(['http', 'admin']);
  });

  it('Service: the metrics port moves off the service port when the settings give both one number', () => {
    const svc = routeService(route(), { ...settings, servicePort: 9090 }) as unknown as {
      spec: { ports: Array<{ name: string; port: number }> };
    };
    expect(svc.spec.ports.map((p) => [p.name, p.port])).toEqual([
      ['http', 9090],
      ['metrics', 9091],
    ]);
  });

  it('the config is plain YAML a person can read', () => {
    expect(parse(renderSidecarConfig(route(), settings))).toMatchObject({ route: { id: 'all' } });
  });

  it('names that cannot be a Service name are reported', () => {
    expect(serviceNameProblem('all')).toBeUndefined();
    expect(serviceNameProblem('a.b')).toMatch(/DNS-1035/);
  });
});
