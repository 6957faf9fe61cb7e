// Every pod Portcullis runs passes the "restricted" Pod Security Standard, as a real API server
// enforces it: each pod template (the chart's with its defaults and with every option on, and what
// the operator renders for routes, upstream gateways, injected sidecars and auth servers) is
// created as a Pod, server-side dry run, in a namespace labelled
// pod-security.kubernetes.io/enforce=restricted. The admission plugin is the same code the cluster
// runs, so this is the check that matters to a platform team that enforces the profile.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { rateLimitRouteSchema, type RateLimitRoute } from '../../operator/api/index.ts';
import { authServerDeployment } from '../../operator/resources/auth/deployment.ts';
import { renderSidecarConfig } from '../../operator/resources/route/config-map.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { injectedSidecar } from '../../operator/resources/route/injection.ts';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';
import { oauthClient, routeObject, settings } from '../unit/operator-fixtures.ts';
import { helmTemplate, OPERATOR_EVERY_OPTION } from './chart-render.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered objects, read in assertions

const NS = 'restricted';
let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster();
  const res = await cluster.request('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: NS,
      labels: {
        'pod-security.kubernetes.io/enforce': 'restricted',
        'pod-security.kubernetes.io/enforce-version': 'latest',
      },
    },
  });
  expect(res.status).toBe(201);
});
afterAll(async () => {
  await cluster?.stop();
});

/** Creates the pod template as a Pod (dry run): the API server's status and its message. */
async function admit(name: string, template: Obj): Promise<{ status: number; message: string }> {
  // The ServiceAccount admission plugin wants the pod's account to exist (no controller makes "default" here).
  const account = String(template['spec']?.['serviceAccountName'] ?? 'default');
  const sa = await cluster.request('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: account },
  });
  expect([201, 409]).toContain(sa.status);
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: template['metadata']?.['labels'] ?? {} },
    spec: template['spec'],
  };
  const res = await cluster.request('POST', `/api/v1/namespaces/${NS}/pods?dryRun=All`, pod);
  return { status: res.status, message: String((res.body as Obj)?.['message'] ?? '') };
}

function helmTemplates(args: readonly string[] = []): Array<[string, Obj]> {
  return parseAllDocuments(helmTemplate(args))
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o?.['kind'] === 'Deployment' || o?.['kind'] === 'StatefulSet')
    .map((o) => [`${o['kind']}/${o['metadata']['name']}`, o['spec']['template'] as Obj]);
}

const routeTemplate = (route: RateLimitRoute): Obj =>
  (routeDeployment(route, settings, renderSidecarConfig(route, settings)) as Obj)['spec'][
    'template'
  ];
const parseRoute = (name: string, spec: Record<string, unknown>) =>
  rateLimitRouteSchema.parse({
    ...routeObject(name),
    spec: { ...(routeObject(name)['spec'] as object), ...spec },
  });

describe('Pod Security "restricted", enforced by a real API server', () => {
  it('admits the pods of the chart with its defaults (the operator and both bundled Redis instances)', async () => {
    const templates = helmTemplates();
    expect(templates.map(([n]) => n)).toEqual(
      expect.arrayContaining(['Deployment/portcullis-operator']),
    );
    expect(templates.length).toBeGreaterThanOrEqual(3);
    for (const [name, template] of templates)
      expect(await admit(name.split('/')[1] as string, template), name).toMatchObject({
        status: 201,
      });
  });

  it('admits the chart pods with every option on (two replicas, spread, priority, digests, extra env)', async () => {
    const templates = helmTemplates(OPERATOR_EVERY_OPTION);
    for (const [name, template] of templates)
      expect(await admit(`all-${name.split('/')[1] as string}`, template), name).toMatchObject({
        status: 201,
      });
  });

  it('admits what the operator renders: a route pod, an upstream gateway pod, an auth server pod', async () => {
    const rendered: Array<[string, Obj]> = [
      ['route-api', routeTemplate(parseRoute('api', {}))],
      [
        'gateway-shop',
        routeTemplate(
          parseRoute('shop', {
            target: undefined,
            upstream: { service: { name: 'shop-api', port: 8080 }, replicas: 2 },
          }),
        ),
      ],
      [
        'auth-server',
        (authServerDeployment('team-a', settings, [oauthClient()]) as Obj)['spec']['template'],
      ],
    ];
    for (const [name, template] of rendered)
      expect(await admit(name, template), name).toMatchObject({ status: 201 });
  });

  it('admits a team pod that is restricted on its own once the sidecar is injected into it: the sidecar brings its own security context', async () => {
    const route = parseRoute('web', { target: undefined, targetRef: { name: 'web', port: 8081 } });
    const patch = injectedSidecar(route, settings, renderSidecarConfig(route, settings)) as Obj;
    const injected = patch['spec']['template'] as Obj;
    const team = {
      name: 'web',
      image: 'team/web:1.0',
      securityContext: {
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      },
    };
    const template = {
      metadata: injected['metadata'],
      spec: {
        ...injected['spec'],
        containers: [team, ...(injected['spec']['containers'] as Obj[])],
      },
    };
    expect(await admit('injected-web', template)).toMatchObject({ status: 201 });
  });

  it('is live: refuses a rendered route pod whose sidecar is made privileged', async () => {
    const template = structuredClone(routeTemplate(parseRoute('bad', {}))) as Obj;
    for (const c of template['spec']['containers'] as Obj[])
      c['securityContext'] = {
        ...c['securityContext'],
        allowPrivilegeEscalation: true,
        privileged: true,
      };
    const res = await admit('bad', template);
    expect(res.status).toBe(403);
    expect(res.message).toMatch(/violates PodSecurity "restricted:latest".*privileged/);
  });
});
