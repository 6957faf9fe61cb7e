// spec.redis.secretRef: the route's pod mounts the Secret key read-only where the sidecar config's
// redis.urlFile points, the route becomes Ready like any other, and a missing Secret or key is a
// Warning Event (the kubelet is the one that cannot start the pod), not an invalid spec.
import { describe, expect, it } from 'vitest';
import { routeConfigMap } from '../../operator/resources/route/config-map.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { SIDECAR_CONFIG_KEY } from '../../operator/resources/route/names.ts';
import { asRecord } from '../../operator/runtime/kube-object.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { parseSidecarConfigText } from '../../lib/config/sidecar.ts';
import { route, routeObject, settings, routeReconciler } from './operator-fixtures.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered objects read in assertions
const secretRef = { secretRef: { name: 'redis-credentials', key: 'redis-url' } };

describe('spec.redis.secretRef: rendered children', () => {
  it('mounts the one Secret key read-only at the urlFile of the sidecar config (a volume, not a subPath: rotations reach the pod)', () => {
    const r = route('all', { redis: secretRef });
    const configText =
      (routeConfigMap(r, settings)['data'] as Record<string, string>)[SIDECAR_CONFIG_KEY] ?? '';
    const urlFile = parseSidecarConfigText(configText).redis?.urlFile;
    expect(urlFile).toBe('/etc/portcullis/redis/url');
    const pod = (routeDeployment(r, settings, configText) as Obj)['spec']['template']['spec'];
    expect(pod['volumes']).toContainEqual({
      name: 'redis-url',
      secret: {
        secretName: 'redis-credentials',
        items: [{ key: 'redis-url', path: 'url' }],
        defaultMode: 0o440,
      },
    });
    const [target, sidecar] = pod['containers'];
    expect(sidecar['volumeMounts']).toContainEqual({
      name: 'redis-url',
      mountPath: '/etc/portcullis/redis',
      readOnly: true,
    });
    for (const m of sidecar['volumeMounts']) expect(m).not.toHaveProperty('subPath');
    expect(
      `${sidecar['volumeMounts'].find((m: Obj) => m['name'] === 'redis-url')['mountPath']}/url`,
    ).toBe(urlFile);
    expect(target['volumeMounts'].map((m: Obj) => m['name'])).not.toContain('redis-url'); // only the sidecar sees the credentials
  });

  it('renders no Secret volume for a route with a plain URL or none', () => {
    for (const r of [route(), route('all', { redis: { url: 'redis://other:6379' } })]) {
      const pod = (routeDeployment(r, settings, 'x') as Obj)['spec']['template']['spec'];
      expect(pod['volumes'].map((v: Obj) => v['name'])).not.toContain('redis-url');
    }
  });
});

describe('spec.redis.secretRef: reconcile', () => {
  async function setup() {
    const { client, events, reconcile } = await routeReconciler();
    const ready = () =>
      (
        (asRecord(client.peek(resourceTypes.rateLimitRoute, 'team-a', 'all')?.['status'])?.[
          'conditions'
        ] ?? []) as Obj[]
      ).find((c) => c['type'] === 'Ready');
    return { client, events, reconcile, ready };
  }

  it('applies the children and reports Ready when the pods are, with no Warning while the Secret has the key', async () => {
    const { client, events, reconcile, ready } = await setup();
    client.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'redis-credentials', namespace: 'team-a' },
      data: { 'redis-url': Buffer.from('redis://:pw@redis:6379').toString('base64') },
    });
    client.put(routeObject('all', { redis: secretRef }));
    await reconcile();
    expect(ready()).toMatchObject({ status: 'False', reason: 'Progressing' });
    const dep = client.peek(resourceTypes.deployment, 'team-a', 'all');
    expect(dep).toMatchObject({ metadata: { name: 'all', namespace: 'team-a' } });
    client.put({
      ...dep!,
      status: {
        observedGeneration: dep!.metadata.generation,
        replicas: 2,
        updatedReplicas: 2,
        readyReplicas: 2,
        availableReplicas: 2,
      },
    });
    await reconcile();
    expect(ready()).toMatchObject({ status: 'True', reason: 'Ready' });
    expect(events.list.filter((e) => e.type === 'Warning')).toEqual([]);
  });

  it('a missing Secret or key: children still applied (not InvalidSpec) and a Warning Event naming it', async () => {
    const { client, events, reconcile, ready } = await setup();
    client.put(routeObject('all', { redis: secretRef }));
    await reconcile();
    expect(ready()?.['reason']).toBe('Progressing');
    expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeDefined();
    expect(events.list.filter((e) => e.type === 'Warning')).toEqual([
      expect.objectContaining({
        reason: 'RedisSecretMissing',
        message: expect.stringMatching(/Secret redis-credentials does not exist/),
      }),
    ]);
    client.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'redis-credentials', namespace: 'team-a' },
      data: { other: 'eA==' },
    });
    await reconcile();
    expect(events.list.at(-1)).toMatchObject({
      reason: 'RedisSecretMissing',
      message: expect.stringMatching(/has no key redis-url/),
    });
  });
});
