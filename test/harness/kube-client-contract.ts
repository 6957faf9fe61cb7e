// One contract for both KubeClient adapters: what the operator relies on from the API server,
// run on the in-memory client in the unit tier and on the REST client against a real
// kube-apiserver in the k8s tier, so that the test double cannot drift from the real thing.
// Kept small: one namespace, ConfigMaps (plain objects, read as metadata only by the operator's
// caches) and a Deployment (generation and a status subresource).
import { beforeAll, describe, expect, it } from 'vitest';
import { KubeApiError } from '../../operator/runtime/errors.ts';
import type { KubeClient, WatchEvent } from '../../operator/runtime/kube-client.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { eventually } from './eventually.ts';

const NS = 'contract';

function configMap(
  name: string,
  data: Record<string, string>,
  labels: Record<string, string> = {},
): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS, labels }, data };
}

function deployment(name: string, image: string): KubeObject {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name: 'app', image }] } },
    },
  };
}

async function refusal(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (err: unknown) => err,
  );
}

/** Registers the contract's tests; `makeClient` runs once, before them. */
export function kubeClientContract(name: string, makeClient: () => Promise<KubeClient>): void {
  describe(`KubeClient contract: ${name}`, () => {
    let client: KubeClient;
    beforeAll(async () => {
      client = await makeClient();
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    });

    it('a get of a missing object is undefined, and its delete is false', async () => {
      expect(await client.get(resourceTypes.configMap, NS, 'missing')).toBeUndefined();
      expect(await client.delete(resourceTypes.configMap, NS, 'missing')).toBe(false);
    });

    it('apply creates; a changed apply updates and bumps resourceVersion; an identical apply writes nothing', async () => {
      const created = await client.apply(configMap('applied', { a: '1', b: '2' }));
      expect(created.metadata).toMatchObject({
        name: 'applied',
        namespace: NS,
        uid: expect.any(String),
        resourceVersion: expect.any(String),
      });
      expect(created['data']).toEqual({ a: '1', b: '2' });
      // Only kinds with a spec the API server tracks count generations (not ConfigMaps, Secrets, Services, Leases).
      expect(created.metadata.generation).toBeUndefined();

      const changed = await client.apply(configMap('applied', { a: '1', b: '3' }));
      expect(changed['data']).toEqual({ a: '1', b: '3' });
      expect(changed.metadata.uid).toBe(created.metadata.uid);
      expect(changed.metadata.resourceVersion).not.toBe(created.metadata.resourceVersion);

      const same = await client.apply(configMap('applied', { a: '1', b: '3' }));
      expect(same.metadata.resourceVersion).toBe(changed.metadata.resourceVersion);
      expect(
        (await client.get(resourceTypes.configMap, NS, 'applied'))?.metadata.resourceVersion,
      ).toBe(changed.metadata.resourceVersion);
    });

    it('a field the manager applied before and leaves out now is removed', async () => {
      await client.apply(configMap('dropped', { a: '1', b: '2' }, { keep: 'x', drop: 'y' }));
      const after = await client.apply(configMap('dropped', { a: '1' }, { keep: 'x' }));
      expect(after['data']).toEqual({ a: '1' });
      expect(after.metadata.labels).toEqual({ keep: 'x' });
    });

    it('generation counts spec changes only; the status subresource is applied on its own', async () => {
      const created = await client.apply(deployment('web', 'nginx:1'));
      expect(created.metadata.generation).toBe(1);
      const bumped = await client.apply(deployment('web', 'nginx:2'));
      expect(bumped.metadata.generation).toBe(2);

      const status = { observedGeneration: 2, replicas: 1 };
      const withStatus = await client.apply(
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web', namespace: NS },
          status,
        },
        'status',
      );
      expect(withStatus['status']).toMatchObject(status);
      expect(withStatus.metadata.generation).toBe(2);
      expect(withStatus.metadata.resourceVersion).not.toBe(bumped.metadata.resourceVersion);
      expect(withStatus['spec']).toMatchObject({
        template: { spec: { containers: [{ name: 'app', image: 'nginx:2' }] } },
      });

      const again = await client.apply(
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web', namespace: NS },
          status,
        },
        'status',
      );
      expect(again.metadata.resourceVersion).toBe(withStatus.metadata.resourceVersion);
      // The main resource's apply leaves status alone.
      const spec = await client.apply(deployment('web', 'nginx:2'));
      expect(spec['status']).toMatchObject(status);
    });

    it('a status field the manager applied before and leaves out now is removed; spec is untouched', async () => {
      await client.apply(deployment('stat', 'nginx:1'));
      const status = (s: Record<string, unknown>): KubeObject => ({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'stat', namespace: NS },
        status: s,
      });
      await client.apply(
        status({ observedGeneration: 1, replicas: 1, readyReplicas: 1 }),
        'status',
      );
      const after = await client.apply(status({ observedGeneration: 1, replicas: 1 }), 'status');
      expect(after['status']).toEqual({ observedGeneration: 1, replicas: 1 });
      expect(after.metadata.generation).toBe(1);
    });

    it('a second field manager adds to an object someone else made, and takes away only what it added', async () => {
      const team = deployment('team', 'team:1');
      team['spec'] = {
        ...(team['spec'] as object),
        template: {
          metadata: { labels: { app: 'team' } },
          spec: { containers: [{ name: 'app', image: 'team:1' }] },
        },
      };
      await client.create(team);
      const injected = await client.apply(
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'team', namespace: NS },
          spec: {
            template: {
              metadata: { labels: { injected: 'yes' } },
              spec: { containers: [{ name: 'sidecar', image: 'sidecar:1' }] },
            },
          },
        },
        undefined,
        'contract-injector',
      );
      const podOf = (o: KubeObject | undefined) =>
        (
          o?.['spec'] as {
            template: {
              metadata: { labels: Record<string, string> };
              spec: { containers: Array<{ name: string; image: string }> };
            };
          }
        ).template;
      expect(podOf(injected).metadata.labels).toEqual({ app: 'team', injected: 'yes' });
      expect(podOf(injected).spec.containers.map((c) => `${c.name}=${c.image}`)).toEqual([
        'app=team:1',
        'sidecar=sidecar:1',
      ]);
      expect(injected.metadata.generation).toBe(2);

      const released = await client.apply(
        { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'team', namespace: NS } },
        undefined,
        'contract-injector',
      );
      expect(podOf(released).metadata.labels).toEqual({ app: 'team' });
      expect(podOf(released).spec.containers.map((c) => `${c.name}=${c.image}`)).toEqual([
        'app=team:1',
      ]);
    });

    it('a status apply to a missing object is NotFound', async () => {
      const err = await refusal(
        client.apply(
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'nowhere', namespace: NS },
            status: { replicas: 1 },
          },
          'status',
        ),
      );
      expect(err).toBeInstanceOf(KubeApiError);
      expect(err).toMatchObject({ status: 404 });
    });

    it('a list honours the label selector', async () => {
      await client.apply(configMap('sel-a', {}, { team: 'a', tier: 'x' }));
      await client.apply(configMap('sel-b', {}, { team: 'b' }));
      await client.apply(configMap('sel-none', {}));
      const names = async (labelSelector: string) =>
        (await client.list(resourceTypes.configMap, { namespace: NS, labelSelector })).items
          .map((o) => o.metadata.name)
          .sort();
      expect(await names('team=a')).toEqual(['sel-a']);
      expect(await names('team')).toEqual(['sel-a', 'sel-b']);
      expect(await names('team,!tier')).toEqual(['sel-b']);
      expect(await names('team!=a')).toContain('sel-none');
      expect(await names('team!=a')).not.toContain('sel-a');
      expect(await names('team in (a,b),tier notin (y)')).toEqual(['sel-a', 'sel-b']);
    });

    it('a metadata-only list carries names, labels and versions, not the contents', async () => {
      await client.apply(configMap('meta', { secret: 'contents' }, { team: 'meta' }));
      const { items, resourceVersion } = await client.list(resourceTypes.configMap, {
        namespace: NS,
        labelSelector: 'team=meta',
        metadataOnly: true,
      });
      expect(resourceVersion).not.toBe('');
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'meta', labels: { team: 'meta' }, resourceVersion: expect.any(String) },
      });
      expect(items[0]).not.toHaveProperty('data');
    });

    it('a metadata-only watch delivers metadata, not the contents', async () => {
      const { resourceVersion } = await client.list(resourceTypes.configMap, {
        namespace: NS,
        metadataOnly: true,
      });
      const seen: WatchEvent[] = [];
      const stop = new AbortController();
      const done = client.watch(
        resourceTypes.configMap,
        { namespace: NS, resourceVersion, metadataOnly: true, labelSelector: 'team=watched-meta' },
        (e) => {
          if (e.type !== 'BOOKMARK') seen.push(e);
        },
        stop.signal,
      );
      await client.apply(configMap('other-meta', { secret: 'contents' }));
      await client.apply(
        configMap('watched-meta', { secret: 'contents' }, { team: 'watched-meta' }),
      );
      await eventually('the ADDED event', () => seen.length >= 1);
      stop.abort();
      await done;
      expect(seen.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
        'ADDED watched-meta',
      ]);
      expect(seen[0]?.object).toMatchObject({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { labels: { team: 'watched-meta' } },
      });
      expect(seen[0]?.object).not.toHaveProperty('data');
    });

    it('a watch by label selector sees an object enter the selection as ADDED and leave it as DELETED', async () => {
      const { resourceVersion } = await client.list(resourceTypes.configMap, {
        namespace: NS,
        labelSelector: 'flag=on',
      });
      const seen: string[] = [];
      const stop = new AbortController();
      const done = client.watch(
        resourceTypes.configMap,
        { namespace: NS, resourceVersion, labelSelector: 'flag=on' },
        (e) => {
          if (e.type !== 'BOOKMARK')
            seen.push(`${e.type} ${e.object.metadata.labels?.['flag'] ?? '-'}`);
        },
        stop.signal,
      );
      await client.apply(configMap('flagged', { a: '1' }, { flag: 'off' }));
      await client.apply(configMap('flagged', { a: '1' }, { flag: 'on' }));
      await client.apply(configMap('flagged', { a: '2' }, { flag: 'on' }));
      await client.apply(configMap('flagged', { a: '2' }, { flag: 'off' }));
      await eventually('three events', () => seen.length >= 3);
      stop.abort();
      await done;
      // The DELETED event carries the object as it was when it last matched.
      expect(seen).toEqual(['ADDED on', 'MODIFIED on', 'DELETED on']);
    });

    it('a delete whose uid precondition does not match is refused and deletes nothing', async () => {
      const live = await client.apply(configMap('guarded', { a: '1' }));
      const err = await refusal(
        client.delete(
          resourceTypes.configMap,
          NS,
          'guarded',
          '00000000-0000-0000-0000-000000000000',
        ),
      );
      expect(err).toBeInstanceOf(KubeApiError);
      expect(err).toMatchObject({ status: 409, reason: 'Conflict' });
      expect((await client.get(resourceTypes.configMap, NS, 'guarded'))?.metadata.uid).toBe(
        live.metadata.uid,
      );
      expect(await client.delete(resourceTypes.configMap, NS, 'guarded', live.metadata.uid)).toBe(
        true,
      );
      expect(await client.get(resourceTypes.configMap, NS, 'guarded')).toBeUndefined();
    });

    it('a create of an existing name is AlreadyExists; an update from a stale version is a Conflict', async () => {
      const first = await client.create(configMap('taken', { a: '1' }));
      const exists = await refusal(client.create(configMap('taken', { a: '2' })));
      expect(exists).toBeInstanceOf(KubeApiError);
      expect(exists).toMatchObject({ status: 409, reason: 'AlreadyExists' });
      await client.update({ ...first, data: { a: '2' } });
      const stale = await refusal(client.update({ ...first, data: { a: '3' } }));
      expect(stale).toMatchObject({ status: 409, reason: 'Conflict' });
      expect((await client.get(resourceTypes.configMap, NS, 'taken'))?.['data']).toEqual({
        a: '2',
      });
    });

    it('a watch from a list version delivers ADDED, MODIFIED and DELETED in order', async () => {
      const { resourceVersion } = await client.list(resourceTypes.configMap, { namespace: NS });
      const seen: WatchEvent[] = [];
      const stop = new AbortController();
      const done = client.watch(
        resourceTypes.configMap,
        { namespace: NS, resourceVersion },
        (e) => {
          if (e.type !== 'BOOKMARK' && e.object.metadata.name === 'watched') seen.push(e);
        },
        stop.signal,
      );
      const created = await client.apply(configMap('watched', { a: '1' }));
      const changed = await client.apply(configMap('watched', { a: '2' }));
      await client.delete(resourceTypes.configMap, NS, 'watched');
      await eventually('the three events', () => seen.length >= 3);
      expect(seen.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
      expect(seen[0]?.object.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
      expect(seen[1]?.object).toMatchObject({
        kind: 'ConfigMap',
        data: { a: '2' },
        metadata: { resourceVersion: changed.metadata.resourceVersion },
      });
      stop.abort();
      await done;
    });
  });
}
