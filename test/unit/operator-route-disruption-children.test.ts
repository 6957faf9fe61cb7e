// The children that come and go with the route's shape: the PodDisruptionBudget with the replica
// count, the NetworkPolicy with the operator's setting; the auth server's budget with its replicas.
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuthServerReconciler } from '../../operator/controllers/auth-server-reconciler.ts';
import { OAuthClientReconciler } from '../../operator/controllers/oauth-client-reconciler.ts';
import type { ResourceSettings } from '../../operator/resources/shared/settings.ts';
import { Applier } from '../../operator/runtime/applier.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { ManualClock, flush } from '../harness/manual-clock.ts';
import {
  clientObject,
  recordingEvents,
  routeObject,
  settings,
  silent,
  startCaches,
  routeReconciler,
} from './operator-fixtures.ts';

const routeOperator = (client: MemoryKubeClient, s: ResourceSettings = settings) =>
  routeReconciler({ client, settings: s });

const routeWithReplicas = (replicas: number) => {
  const r = routeObject();
  const spec = r['spec'] as { target: Record<string, unknown> };
  return { ...r, spec: { ...spec, target: { ...spec.target, replicas } } };
};
const pdb = (client: MemoryKubeClient, name = 'all') =>
  client.peek(resourceTypes.podDisruptionBudget, 'team-a', name);
const policy = (client: MemoryKubeClient) =>
  client.peek(resourceTypes.networkPolicy, 'team-a', 'all');
const childWrites = (client: MemoryKubeClient) =>
  client.writes().filter((w) => w.subresource === undefined);

describe('RateLimitRoute: budget and policy follow the spec and the settings', () => {
  it('scaled from 2 to 1 the budget is deleted (one write, an event); back to 3 it returns', async () => {
    const client = new MemoryKubeClient();
    const op = await routeOperator(client);
    client.put(routeWithReplicas(2));
    await op.reconcile();
    expect(pdb(client)).toBeDefined();
    client.put(routeWithReplicas(1));
    const before = childWrites(client).length;
    await op.reconcile();
    expect(pdb(client)).toBeUndefined();
    expect(
      childWrites(client)
        .slice(before)
        .map((w) => `${w.verb} ${w.kind}`),
    ).toEqual(['apply Deployment', 'delete PodDisruptionBudget']);
    expect(op.events.list.map((e) => e.message)).toContain('deleted PodDisruptionBudget all');
    // Settled at one replica: nothing more to delete, nothing written.
    const settled = childWrites(client).length;
    await op.reconcile();
    expect(childWrites(client).length).toBe(settled);
    client.put(routeWithReplicas(3));
    await op.reconcile();
    expect(pdb(client)?.['spec']).toMatchObject({ maxUnavailable: 1 });
  });

  it('a budget of that name the route does not control is left alone', async () => {
    const client = new MemoryKubeClient();
    const op = await routeOperator(client);
    client.put(routeWithReplicas(1));
    client.put({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: {
        name: 'all',
        namespace: 'team-a',
        labels: { 'app.kubernetes.io/managed-by': 'portcullis-operator' },
        ownerReferences: [
          {
            apiVersion: 'portcullis.dev/v1alpha1',
            kind: 'RateLimitRoute',
            name: 'all',
            uid: 'uid-of-an-earlier-route',
            controller: true,
          },
        ],
      },
      spec: { maxUnavailable: 1 },
    });
    await op.reconcile();
    expect(pdb(client)).toBeDefined();
    expect(client.writes('PodDisruptionBudget')).toEqual([]);
  });

  it('with the NetworkPolicy switched off none is made, and one made earlier is deleted', async () => {
    const client = new MemoryKubeClient();
    const on = await routeOperator(client);
    client.put(routeObject());
    await on.reconcile();
    expect(policy(client)).toBeDefined();
    const off = await routeOperator(client, { ...settings, routeNetworkPolicy: false });
    await off.reconcile();
    expect(policy(client)).toBeUndefined();
    expect(client.writes('NetworkPolicy').map((w) => w.verb)).toEqual(['apply', 'delete']);
    await off.reconcile();
    expect(client.writes('NetworkPolicy')).toHaveLength(2);
  });

  it('a no-op reconcile of a route with every child writes nothing', async () => {
    const client = new MemoryKubeClient();
    const op = await routeOperator(client);
    client.put(routeObject());
    await op.reconcile();
    await op.reconcile();
    const before = client.writes().length;
    await op.reconcile();
    expect(client.writes().length).toBe(before);
  });
});

describe('auth server: a budget while it runs more than one replica', () => {
  async function authOperator(client: MemoryKubeClient, s: ResourceSettings) {
    const clock = new ManualClock();
    const caches = await startCaches(client, clock);
    onTestFinished(caches.stop);
    const applier = new Applier(client);
    const clients = new OAuthClientReconciler({
      client,
      applier,
      caches,
      clock,
      events: recordingEvents(),
      log: silent,
    });
    const authServer = new AuthServerReconciler({
      client,
      applier,
      caches,
      settings: s,
      clock,
      log: silent,
    });
    return async () => {
      for (const step of [
        () => clients.reconcile('team-a/demo-app'),
        () => authServer.reconcile('team-a'),
      ]) {
        await flush();
        await step();
      }
      await flush();
    };
  }

  it('two replicas: a budget; one replica: deleted; the last OAuthClient gone: deleted with the rest', async () => {
    const client = new MemoryKubeClient();
    const two = await authOperator(client, settings);
    client.put(clientObject());
    await two();
    expect(pdb(client, 'portcullis-auth-server')?.['spec']).toMatchObject({ maxUnavailable: 1 });
    const before = client.writes('PodDisruptionBudget').length;
    await two();
    expect(client.writes('PodDisruptionBudget').length).toBe(before); // settled: no write
    const one = await authOperator(client, { ...settings, authServerReplicas: 1 });
    await one();
    expect(pdb(client, 'portcullis-auth-server')).toBeUndefined();
    const again = await authOperator(client, settings);
    await again();
    expect(pdb(client, 'portcullis-auth-server')).toBeDefined();
    client.remove(resourceTypes.oauthClient, 'team-a', 'demo-app');
    await again();
    expect(pdb(client, 'portcullis-auth-server')).toBeUndefined();
    expect(
      client.peek(resourceTypes.deployment, 'team-a', 'portcullis-auth-server'),
    ).toBeUndefined();
  });

  it('a NetworkPolicy admitting only the HTTP and metrics ports; removed when NetworkPolicies are turned off, and with the last OAuthClient', async () => {
    const client = new MemoryKubeClient();
    const on = await authOperator(client, settings);
    client.put(clientObject());
    await on();
    const policy = client.peek(resourceTypes.networkPolicy, 'team-a', 'portcullis-auth-server') as
      Record<string, any> | undefined; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered JSON
    expect(policy?.['spec']).toEqual({
      podSelector: {
        matchLabels: {
          'app.kubernetes.io/name': 'portcullis-auth-server',
          'app.kubernetes.io/instance': 'portcullis-auth-server',
        },
      },
      policyTypes: ['Ingress'],
      ingress: [
        {
          ports: [
            { protocol: 'TCP', port: settings.authServerPort },
            { protocol: 'TCP', port: 9090 },
          ],
        },
      ],
    });
    const before = client.writes('NetworkPolicy').length;
    await on();
    expect(client.writes('NetworkPolicy').length).toBe(before); // settled: no write
    const off = await authOperator(client, { ...settings, routeNetworkPolicy: false });
    await off();
    expect(
      client.peek(resourceTypes.networkPolicy, 'team-a', 'portcullis-auth-server'),
    ).toBeUndefined();
    await on();
    expect(
      client.peek(resourceTypes.networkPolicy, 'team-a', 'portcullis-auth-server'),
    ).toBeDefined();
    client.remove(resourceTypes.oauthClient, 'team-a', 'demo-app');
    await on();
    expect(
      client.peek(resourceTypes.networkPolicy, 'team-a', 'portcullis-auth-server'),
    ).toBeUndefined();
  });
});
