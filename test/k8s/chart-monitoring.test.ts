// The chart's monitoring objects against a real API server: off by default; with the options on,
// exactly one ServiceMonitor (the operator's metrics Service), two PodMonitors whose selectors
// and ports are those of the pods the operator renders, and the dashboard ConfigMap; helm lint
// --strict passes; and they apply with a server-side dry run.
//
// The Prometheus Operator's CRDs are not part of this repository and the k8s tier runs offline,
// so the dry run uses minimal stand-in CRDs (below): the same group, version, kinds and scope,
// with a structural schema of the fields the chart writes (spelled and typed as in the Prometheus
// Operator's monitoring.coreos.com/v1 API). kubectl's strict field validation then refuses a
// misspelled or mistyped field, which the last test checks on purpose. They do not replace the
// real schemas' every rule (e.g. the duration pattern is checked by values.schema.json).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { authServerDeployment } from '../../operator/resources/auth/deployment.ts';
import { ROUTE_LABEL } from '../../operator/resources/shared/metadata.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { injectedSidecar } from '../../operator/resources/route/injection.ts';
import { defaultResourceSettings } from '../../operator/resources/shared/settings.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';
import { route } from '../unit/operator-fixtures.ts';

let cluster: Cluster;
const NS = 'portcullis-system';

const stringList = { type: 'array', items: { type: 'string' } };
const labelMap = { type: 'object', additionalProperties: { type: 'string' } };
const namespaceSelector = {
  type: 'object',
  properties: { any: { type: 'boolean' }, matchNames: stringList },
};
const selector = { type: 'object', properties: { matchLabels: labelMap } };
const relabelings = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      sourceLabels: stringList,
      targetLabel: { type: 'string' },
      action: { type: 'string' },
      regex: { type: 'string' },
      replacement: { type: 'string' },
    },
  },
};
const endpoint = {
  type: 'object',
  properties: {
    port: { type: 'string' },
    path: { type: 'string' },
    interval: { type: 'string' },
    scrapeTimeout: { type: 'string' },
    relabelings,
  },
};

function standInCrd(
  kind: 'ServiceMonitor' | 'PodMonitor',
  plural: string,
  endpointsField: 'endpoints' | 'podMetricsEndpoints',
) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.monitoring.coreos.com` },
    spec: {
      group: 'monitoring.coreos.com',
      scope: 'Namespaced',
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              required: ['spec'],
              properties: {
                spec: {
                  type: 'object',
                  required: ['selector'],
                  properties: {
                    selector,
                    namespaceSelector,
                    [endpointsField]: { type: 'array', items: endpoint },
                    jobLabel: { type: 'string' },
                    ...Object.fromEntries(
                      ['sampleLimit', 'labelLimit', 'targetLimit'].map((f) => [
                        f,
                        { type: 'integer', format: 'int64' },
                      ]),
                    ),
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}

beforeAll(async () => {
  cluster = await startCluster();
  const crds = await cluster.kubectl(['apply', '--server-side', '-f', 'charts/portcullis/crds/']);
  expect(crds.code, crds.stderr).toBe(0);
  const standIns = [
    standInCrd('ServiceMonitor', 'servicemonitors', 'endpoints'),
    standInCrd('PodMonitor', 'podmonitors', 'podMetricsEndpoints'),
  ];
  const applied = await cluster.kubectl(['apply', '--server-side', '-f', '-'], {
    input: standIns.map((c) => JSON.stringify(c)).join('\n---\n'),
  });
  expect(applied.code, applied.stderr).toBe(0);
  const established = await cluster.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/ratelimitroutes.portcullis.dev',
    'crd/servicemonitors.monitoring.coreos.com',
    'crd/podmonitors.monitoring.coreos.com',
  ]);
  expect(established.code, established.stderr).toBe(0);
  for (const ns of [NS, 'team-a', 'grafana']) await cluster.kubectl(['create', 'namespace', ns]);
});
afterAll(async () => {
  await cluster?.stop();
});

type Doc = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- rendered YAML, read in assertions
  spec?: any;
  data?: Record<string, string>;
};

const ALL_ON = [
  '--set',
  'monitoring.serviceMonitor.enabled=true',
  '--set',
  'monitoring.podMonitor.enabled=true',
  '--set',
  'monitoring.dashboard.enabled=true',
];

async function render(args: string[] = []): Promise<{ stdout: string; docs: Doc[] }> {
  const res = await cluster.helm([
    'template',
    'portcullis',
    'charts/portcullis',
    '--namespace',
    NS,
    '--kube-version',
    cluster.tools.kubernetesVersion,
    ...args,
  ]);
  expect(res.code, res.stderr).toBe(0);
  const docs = parseAllDocuments(res.stdout)
    .map((d) => d.toJS() as Doc | null)
    .filter((d): d is Doc => d !== null && typeof d.kind === 'string');
  return { stdout: res.stdout, docs };
}

const monitoringObjects = (docs: Doc[]) =>
  docs
    .filter(
      (d) =>
        d.apiVersion === 'monitoring.coreos.com/v1' ||
        (d.kind === 'ConfigMap' && d.metadata.name.endsWith('-dashboard')),
    )
    .map((d) => `${d.kind}/${d.metadata.namespace}/${d.metadata.name}`);

type Pod = {
  metadata: { labels: Record<string, string> };
  spec: { containers: Array<{ name: string; ports: Array<{ name: string }> }> };
};
const podOf = (dep: KubeObject) => (dep as unknown as { spec: { template: Pod } }).spec.template;

describe('the chart with monitoring', () => {
  it('renders no monitoring object by default', async () => {
    const { docs, stdout } = await render();
    expect(monitoringObjects(docs)).toEqual([]);
    expect(stdout).not.toContain('monitoring.coreos.com');
  });

  it('renders exactly the ServiceMonitor, the two PodMonitors and the dashboard when switched on', async () => {
    const { docs } = await render([
      ...ALL_ON,
      '--set',
      'monitoring.podMonitor.labels.release=kube-prometheus-stack',
      '--set',
      'monitoring.serviceMonitor.interval=15s',
    ]);
    expect(monitoringObjects(docs).sort()).toEqual(
      [
        `ServiceMonitor/${NS}/portcullis-operator`,
        `PodMonitor/${NS}/portcullis-sidecars`,
        `PodMonitor/${NS}/portcullis-auth-servers`,
        `ConfigMap/${NS}/portcullis-dashboard`,
      ].sort(),
    );
    const find = (kind: string, name: string) =>
      docs.find((d) => d.kind === kind && d.metadata.name === name);

    const serviceMonitor = find('ServiceMonitor', 'portcullis-operator');
    expect(serviceMonitor?.spec).toEqual({
      selector: {
        matchLabels: {
          'app.kubernetes.io/name': 'portcullis',
          'app.kubernetes.io/instance': 'portcullis',
          'app.kubernetes.io/component': 'operator',
        },
      },
      namespaceSelector: { matchNames: [NS] },
      endpoints: [
        { port: 'http-metrics', path: '/metrics', interval: '15s', scrapeTimeout: '10s' },
      ],
    });
    expect(serviceMonitor?.metadata.labels?.['release']).toBeUndefined();
    // It selects the operator's metrics Service, by a port that Service has.
    const metricsService = find('Service', 'portcullis-operator-metrics');
    expect(metricsService?.metadata.labels).toMatchObject(
      serviceMonitor?.spec.selector.matchLabels,
    );
    expect(metricsService?.spec.ports.map((p: { name: string }) => p.name)).toContain(
      'http-metrics',
    );

    const sidecars = find('PodMonitor', 'portcullis-sidecars');
    const auth = find('PodMonitor', 'portcullis-auth-servers');
    expect(sidecars?.metadata.labels).toMatchObject({
      release: 'kube-prometheus-stack',
      'app.kubernetes.io/instance': 'portcullis',
    });
    expect(auth?.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
    // One endpoint per name of the sidecar's admin port, each keeping only the sidecar container
    // (a team container beside an injected sidecar may have a port named admin of its own).
    const sidecarEndpoint = (port: string, container: string) => ({
      port,
      path: '/metrics',
      interval: '30s',
      scrapeTimeout: '10s',
      relabelings: [
        {
          sourceLabels: ['__meta_kubernetes_pod_container_name'],
          regex: container,
          action: 'keep',
        },
        {
          sourceLabels: ['__meta_kubernetes_pod_label_portcullis_dev_route'],
          targetLabel: 'portcullis_route',
          action: 'replace',
        },
      ],
    });
    // Bounded: a tenant can label any pod of its own like a sidecar.
    const limits = { sampleLimit: 5000, labelLimit: 32, targetLimit: 1000 };
    expect(sidecars?.spec).toEqual({
      selector: { matchLabels: { 'portcullis.dev/sidecar': 'true' } },
      namespaceSelector: { any: true },
      ...limits,
      podMetricsEndpoints: [
        sidecarEndpoint('admin', 'sidecar'),
        sidecarEndpoint('rlr-admin', 'portcullis-sidecar'),
      ],
    });
    expect(auth?.spec).toEqual({
      selector: {
        matchLabels: {
          'app.kubernetes.io/name': 'portcullis-auth-server',
          'app.kubernetes.io/component': 'auth-server',
          'app.kubernetes.io/managed-by': 'portcullis-operator',
        },
      },
      namespaceSelector: { any: true },
      ...limits,
      podMetricsEndpoints: [
        { port: 'metrics', path: '/metrics', interval: '30s', scrapeTimeout: '10s' },
      ],
    });

    // Tied to what the operator renders: every selected label is on its pods, the scraped port is
    // a named container port of those pods, and the relabelled meta label is the route label.
    // The sidecar runs in the operator's route pods and, with spec.targetRef, in a team's pods
    // (their labels plus those the operator's sidecar field manager applies).
    const routePod = podOf(routeDeployment(route(), defaultResourceSettings, 'listen: {}'));
    const injected = podOf(
      injectedSidecar(
        route('shop', { target: undefined, targetRef: { name: 'web', port: 8081 } }),
        defaultResourceSettings,
        'listen: {}',
      ),
    );
    const teamPod: Pod = {
      metadata: { labels: { app: 'web', ...injected.metadata.labels } },
      spec: {
        containers: [{ name: 'app', ports: [{ name: 'admin' }] }, ...injected.spec.containers],
      },
    };
    const authPod = podOf(authServerDeployment('team-a', defaultResourceSettings, []));
    expect(authPod.metadata.labels).toMatchObject(auth?.spec.selector.matchLabels);
    expect(authPod.spec.containers[0]?.ports.map((p) => p.name)).toContain('metrics');
    /** The containers of a pod an endpoint scrapes: those with its port name that its keep rule leaves. */
    const scraped = (pod: Pod, endpoint: ReturnType<typeof sidecarEndpoint>) =>
      pod.spec.containers
        .filter(
          (c) =>
            c.ports.some((p) => p.name === endpoint.port) &&
            c.name === endpoint.relabelings[0]?.regex,
        )
        .map((c) => c.name);
    const [adminEndpoint, injectedEndpoint] = sidecars?.spec.podMetricsEndpoints as ReturnType<
      typeof sidecarEndpoint
    >[];
    for (const pod of [routePod, teamPod]) {
      expect(pod.metadata.labels).toMatchObject(sidecars?.spec.selector.matchLabels);
      expect(pod.metadata.labels).not.toMatchObject(auth?.spec.selector.matchLabels);
    }
    // Each sidecar is scraped once; the team's own admin port is not.
    expect([...scraped(routePod, adminEndpoint!), ...scraped(routePod, injectedEndpoint!)]).toEqual(
      ['sidecar'],
    );
    expect([...scraped(teamPod, adminEndpoint!), ...scraped(teamPod, injectedEndpoint!)]).toEqual([
      'portcullis-sidecar',
    ]);
    // The relabelled meta label is the route label, on both kinds of pod.
    expect(`__meta_kubernetes_pod_label_${ROUTE_LABEL.replace(/[^a-zA-Z0-9_]/g, '_')}`).toBe(
      adminEndpoint?.relabelings[1]?.sourceLabels[0],
    );
    expect(routePod.metadata.labels[ROUTE_LABEL]).toBe(route().metadata.name);
    expect(teamPod.metadata.labels[ROUTE_LABEL]).toBe('shop');
    expect(authPod.metadata.labels).not.toMatchObject(sidecars?.spec.selector.matchLabels);

    const dashboard = find('ConfigMap', 'portcullis-dashboard');
    expect(dashboard?.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(Object.keys(dashboard?.data ?? {})).toEqual(['portcullis.json']);
    expect(JSON.parse(dashboard?.data?.['portcullis.json'] ?? '')).toEqual(
      JSON.parse(readFileSync('charts/portcullis/dashboards/portcullis.json', 'utf8')),
    );
  });

  it('looks only in the watched namespaces when the operator watches some', async () => {
    const { docs } = await render([...ALL_ON, '--set', 'operator.watchNamespaces={team-a,team-b}']);
    for (const d of docs.filter((x) => x.kind === 'PodMonitor'))
      expect(d.spec.namespaceSelector).toEqual({ matchNames: ['team-a', 'team-b'] });
  });

  it("puts the dashboard where Grafana's sidecar looks, with its labels and annotations", async () => {
    const { docs } = await render([
      '--set',
      'monitoring.dashboard.enabled=true',
      '--set',
      'monitoring.dashboard.namespace=grafana',
      '--set-json',
      'monitoring.dashboard.labels={"grafana_dashboard":"portcullis"}',
      '--set',
      'monitoring.dashboard.annotations.grafana_folder=Portcullis',
    ]);
    const dashboard = docs.find(
      (d) => d.kind === 'ConfigMap' && d.metadata.name === 'portcullis-dashboard',
    );
    expect(dashboard?.metadata.namespace).toBe('grafana');
    expect(dashboard?.metadata.labels?.['grafana_dashboard']).toBe('portcullis');
    expect(dashboard?.metadata.annotations).toEqual({ grafana_folder: 'Portcullis' });
    expect(monitoringObjects(docs)).toEqual(['ConfigMap/grafana/portcullis-dashboard']);
  });

  it('passes helm lint --strict with everything on, and refuses a malformed interval', async () => {
    const lint = await cluster.helm([
      'lint',
      '--strict',
      'charts/portcullis',
      '--kube-version',
      cluster.tools.kubernetesVersion,
      ...ALL_ON,
    ]);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    expect(lint.stdout).toMatch(/0 chart\(s\) failed/);
    const bad = await cluster.helm([
      'template',
      'portcullis',
      'charts/portcullis',
      '--namespace',
      NS,
      '--set',
      'monitoring.podMonitor.interval=30 seconds',
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/interval/);
    const unknown = await cluster.helm([
      'template',
      'portcullis',
      'charts/portcullis',
      '--namespace',
      NS,
      '--set',
      'monitoring.podMonitor.enabeld=true',
    ]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/enabeld/);
  });

  it('applies with a server-side dry run (stand-in CRDs), which refuses a misspelled field', async () => {
    const { stdout } = await render(ALL_ON);
    const dry = await cluster.kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], {
      input: stdout,
    });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      'servicemonitor.monitoring.coreos.com/portcullis-operator serverside-applied (server dry run)',
    );
    expect(dry.stdout).toContain(
      'podmonitor.monitoring.coreos.com/portcullis-sidecars serverside-applied (server dry run)',
    );
    expect(dry.stdout).toContain(
      'podmonitor.monitoring.coreos.com/portcullis-auth-servers serverside-applied (server dry run)',
    );
    expect(dry.stdout).toContain(
      'configmap/portcullis-dashboard serverside-applied (server dry run)',
    );
    const misspelled = stdout.replace('podMetricsEndpoints:', 'podMetricEndpoints:');
    const refused = await cluster.kubectl(
      ['apply', '--server-side', '--dry-run=server', '-f', '-'],
      { input: misspelled },
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/podMetricEndpoints/);
  });
});
