// An informer's index finds cached objects by a derived key (routes by the Deployment their
// spec.targetRef names) without scanning the cache on every event, and follows updates and
// deletions. A keep predicate that changes its answer (a Deployment becomes a route's target) adds
// the object on its next event and reports its deletion even if the cache never held it.
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { Informer } from '../../operator/runtime/informer.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { ManualClock } from '../harness/manual-clock.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';

const log = pino({ level: 'silent' });
const cm = (name: string, target: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'ns' },
  data: { target },
});
const names = (objs: KubeObject[]) => objs.map((o) => o.metadata.name).sort();

function informer(client: MemoryKubeClient, keep?: (o: KubeObject) => boolean) {
  return new Informer(client, new ManualClock(), log, {
    type: resourceTypes.configMap,
    relistIntervalMs: 60_000,
    backoff: { baseMs: 1000, maxMs: 8000 },
    keep,
  });
}

describe('informer index', () => {
  it('finds objects by key, before and after start, and follows updates and deletions', async () => {
    const client = new MemoryKubeClient();
    client.put(cm('a', 'web'));
    const inf = informer(client);
    inf.start();
    await inf.waitForSync();
    inf.addIndex('target', (o) => [
      `${o.metadata.namespace}/${(o['data'] as Record<string, string>)['target']}`,
    ]);
    expect(names(inf.byIndex('target', 'ns/web'))).toEqual(['a']);
    client.put(cm('b', 'web'));
    await vi.waitFor(() => expect(names(inf.byIndex('target', 'ns/web'))).toEqual(['a', 'b']));
    client.put(cm('a', 'api'));
    await vi.waitFor(() => expect(names(inf.byIndex('target', 'ns/web'))).toEqual(['b']));
    expect(names(inf.byIndex('target', 'ns/api'))).toEqual(['a']);
    client.remove(resourceTypes.configMap, 'ns', 'b');
    await vi.waitFor(() => expect(inf.byIndex('target', 'ns/web')).toEqual([]));
    expect(inf.byIndex('nope', 'ns/web')).toEqual([]);
    await inf.stop();
  });

  it('a keep that starts wanting an object: added on its next event, its deletion reported though never cached', async () => {
    const client = new MemoryKubeClient();
    const wanted = new Set<string>();
    const inf = informer(client, (o) => wanted.has(o.metadata.name));
    const seen: string[] = [];
    inf.addHandler({
      onAdd: (o) => seen.push(`add ${o.metadata.name}`),
      onUpdate: (_a, b) => seen.push(`update ${b.metadata.name}`),
      onDelete: (o) => seen.push(`delete ${o.metadata.name}`),
    });
    client.put(cm('web', '1'));
    client.put(cm('api', '1'));
    inf.start();
    await inf.waitForSync();
    expect(inf.size).toBe(0);
    wanted.add('web');
    wanted.add('api');
    client.put(cm('web', '2'));
    await vi.waitFor(() => expect(seen).toEqual(['add web']));
    client.remove(resourceTypes.configMap, 'ns', 'api'); // never cached, wanted now
    client.remove(resourceTypes.configMap, 'ns', 'web');
    await vi.waitFor(() => expect(seen).toEqual(['add web', 'delete api', 'delete web']));
    expect(inf.size).toBe(0);
    await inf.stop();
  });
});
