// kube-score on everything that runs in a cluster: the chart as `helm template` renders it (with
// its defaults and with every option on) and the objects the operator renders for routes and auth
// servers. No CRITICAL finding is allowed. The few checks turned off are the agreed configuration
// below, each with its reason; a last test shows the linter still catches a real gap.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { rateLimitRouteSchema, type RateLimitRoute } from '../../operator/api/index.ts';
import {
  authServerDeployment,
  authServerNetworkPolicy,
  authServerPodDisruptionBudget,
  authServerService,
} from '../../operator/resources/auth/deployment.ts';
import { renderSidecarConfig, routeConfigMap } from '../../operator/resources/route/config-map.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { routeNetworkPolicy } from '../../operator/resources/route/network-policy.ts';
import { routePodDisruptionBudget } from '../../operator/resources/route/pod-disruption-budget.ts';
import { routeService } from '../../operator/resources/route/service.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { k8sTools } from '../harness/k8s/cluster.ts';
import { helmTemplate, OPERATOR_EVERY_OPTION } from './chart-render.ts';
import { oauthClient, routeObject, settings } from '../unit/operator-fixtures.ts';

/** Checks turned off, and why. */
export const KUBE_SCORE_IGNORED: Record<string, string> = {
  'container-image-pull-policy':
    'releases are immutable tags (or digests): IfNotPresent is right for them, and Always would make every pod start depend on the registry',
  'container-ephemeral-storage-request-and-limit':
    'every container runs with a read-only root filesystem and writes only its logs, which the kubelet bounds',
  'container-security-context-user-group-id':
    'the images run as uid/gid 1000 (the bundled Redis as its image user 999) with runAsNonRoot and the restricted Pod Security profile; a uid above 10000 only guards against sharing a uid with the node, which non-root with no host mounts already rules out',
};
/** No CPU limits on purpose: CFS throttling adds latency to a proxy at the moment it is busiest; CPU requests are set. */
const FLAGS = [
  '--ignore-container-cpu-limit',
  ...Object.keys(KUBE_SCORE_IGNORED).flatMap((t) => ['--ignore-test', t]),
];

const tools = k8sTools();
const kubeScore = tools.kubeScore;

function score(yaml: string): { code: number; critical: string[]; output: string } {
  const res = spawnSync(kubeScore, ['score', '-', '--output-format', 'ci', ...FLAGS], {
    input: yaml,
    encoding: 'utf8',
  });
  const output = `${res.stdout}${res.stderr}`;
  return {
    code: res.status ?? -1,
    critical: output.split('\n').filter((l) => l.startsWith('[CRITICAL]')),
    output,
  };
}

const asYaml = (objects: readonly (KubeObject | undefined)[]) =>
  objects
    .filter((o): o is KubeObject => o !== undefined)
    .map((o) => stringify(o))
    .join('---\n');

function routeChildren(route: RateLimitRoute): (KubeObject | undefined)[] {
  const config = renderSidecarConfig(route, settings);
  return [
    routeConfigMap(route, settings),
    routeDeployment(route, settings, config),
    routeService(route, settings),
    routeNetworkPolicy(route, settings),
    routePodDisruptionBudget(route),
  ];
}

/** A route as a team would write it: two replicas and the target's resources. */
const teamRoute = (spec: Record<string, unknown> = {}) => {
  const base = routeObject('api');
  const baseSpec = base['spec'] as Record<string, Record<string, unknown>>;
  return rateLimitRouteSchema.parse({
    ...base,
    spec: {
      ...baseSpec,
      target: {
        ...baseSpec['target'],
        replicas: 2,
        resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
      },
      ...spec,
    },
  });
};

describe('kube-score', () => {
  it('finds nothing critical in the chart with its defaults', () => {
    const res = score(helmTemplate());
    expect(res.critical, res.output).toEqual([]);
    expect(res.code, res.output).toBe(0);
  });

  it('finds nothing critical in the chart with every option on (two operator replicas, monitoring, priority classes, spread, digests, templated CRDs)', () => {
    const res = score(
      helmTemplate([
        ...OPERATOR_EVERY_OPTION,
        '--set',
        'operator.priorityClassName=platform',
        '--set',
        'monitoring.serviceMonitor.enabled=true',
        '--set',
        'monitoring.podMonitor.enabled=true',
        '--set',
        'monitoring.dashboard.enabled=true',
        '--set',
        'crds.enabled=true',
      ]),
    );
    expect(res.critical, res.output).toEqual([]);
    expect(res.code, res.output).toBe(0);
  });

  it('finds nothing critical in what the operator renders for a route (single limit, and rules with a jwt key) and for an auth server', () => {
    const rules = teamRoute({
      limiter: {
        key: { source: 'jwt' },
        rules: [
          { name: 'reads', path: '/api/**', limits: [{ replenishRate: 5, burstCapacity: 10 }] },
        ],
      },
    });
    const owners = [oauthClient()];
    const yaml = asYaml([
      ...routeChildren(teamRoute()),
      ...routeChildren(rules),
      authServerDeployment('team-a', settings, owners),
      authServerService('team-a', settings, owners),
      authServerNetworkPolicy('team-a', settings, owners),
      authServerPodDisruptionBudget('team-a', settings, owners),
    ]);
    const res = score(yaml);
    expect(res.critical, res.output).toEqual([]);
    expect(res.code, res.output).toBe(0);
  });

  it('still catches a real gap: a target container without a memory limit, and a Deployment no NetworkPolicy selects', () => {
    const route = rateLimitRouteSchema.parse({
      ...routeObject('bare'),
      spec: { ...(routeObject('bare')['spec'] as object) },
    });
    const config = renderSidecarConfig(route, settings);
    const res = score(
      asYaml([routeDeployment(route, settings, config), routeService(route, settings)]),
    );
    expect(res.code).toBe(1);
    expect(
      res.critical.some((l) => /\(target\) Memory limit is not set/.test(l)),
      res.output,
    ).toBe(true);
    expect(
      res.critical.some((l) => /does not have a matching NetworkPolicy/.test(l)),
      res.output,
    ).toBe(true);
  });
});
