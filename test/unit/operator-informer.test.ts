import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { KubeApiError } from '../../operator/runtime/errors.ts';
import { Informer } from '../../operator/runtime/informer.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { ManualClock, flush } from '../harness/manual-clock.ts';

const log = pino({ level: 'silent' });

function cm(name: string, value: string, ns = 'default'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace: ns,
      managedFields: [{ manager: 'x', operation: 'Apply', fieldsV1: { 'f:data': {} } }],
    },
    data: { value },
  };
}

function setup(namespaces?: string[]) {
  const client = new MemoryKubeClient();
  const clock = new ManualClock();
  const restarts: string[] = [];
  const informer = new Informer(client, clock, log, {
    type: resourceTypes.configMap,
    namespaces,
    relistIntervalMs: 60_000,
    backoff: { baseMs: 1000, maxMs: 8000 },
    onRestart: (r) => restarts.push(r),
  });
  const seen: string[] = [];
  informer.addHandler({
    onAdd: (o) => seen.push(`add ${o.metadata.name}`),
    onUpdate: (_a, b) => seen.push(`update ${b.metadata.name}`),
    onDelete: (o) => seen.push(`delete ${o.metadata.name}`),
  });
  return { client, clock, informer, seen, restarts };
}

describe('informer', () => {
  it('lists, then follows the watch; the cache keeps only who manages each object, not the field sets', async () => {
    const { client, informer, seen } = setup();
    client.put(cm('a', '1'));
    informer.start();
    await informer.waitForSync();
    expect(informer.get('default', 'a')?.metadata.managedFields).toEqual([
      { manager: 'x', operation: 'Apply' },
    ]);
    await flush();
    client.put(cm('b', '1'));
    client.put(cm('a', '2'));
    client.remove(resourceTypes.configMap, 'default', 'b');
    await vi.waitFor(() => expect(seen).toEqual(['add a', 'add b', 'update a', 'delete b']), {
      timeout: 5000,
    });
    expect(informer.get('default', 'a')?.['data']).toEqual({ value: '2' });
    await informer.stop();
  });

  it('restarts after ANY watch error with backoff, and the relist catches what changed meanwhile', async () => {
    const { client, clock, informer, seen, restarts } = setup();
    client.put(cm('a', '1'));
    informer.start();
    await informer.waitForSync();
    await flush();
    client.failNext('list', new KubeApiError(500, 'etcd hiccup'));
    client.breakWatches(new Error('connection reset'));
    await flush();
    client.put(cm('c', '1'));
    client.remove(resourceTypes.configMap, 'default', 'a');
    expect(restarts).toEqual(['error']);
    // first retry after 1 s fails (the injected 500), second after 2 s more succeeds
    await clock.advance(1000);
    expect(restarts).toEqual(['error', 'error']);
    await clock.advance(2000);
    await vi.waitFor(() => expect(seen).toEqual(['add a', 'add c', 'delete a']), { timeout: 5000 });
    expect(informer.list().map((o) => o.metadata.name)).toEqual(['c']);
    await informer.stop();
  });

  it('relists at once on 410 Gone', async () => {
    const { client, informer, restarts } = setup();
    informer.start();
    await informer.waitForSync();
    await flush();
    const lists = client.requests.filter((r) => r.verb === 'list').length;
    client.breakWatches(new KubeApiError(410, 'too old resource version'));
    await flush();
    expect(restarts).toEqual(['gone']);
    expect(client.requests.filter((r) => r.verb === 'list').length).toBe(lists + 1);
    await informer.stop();
  });

  it('relists periodically', async () => {
    const { client, clock, informer } = setup();
    informer.start();
    await informer.waitForSync();
    await flush();
    await clock.advance(60_000);
    await clock.advance(60_000);
    expect(client.requests.filter((r) => r.verb === 'list').length).toBe(3);
    await informer.stop();
  });

  it('watches each listed namespace and syncs only when all have listed', async () => {
    const { client, informer } = setup(['one', 'two']);
    client.put(cm('a', '1', 'one'));
    client.put(cm('b', '1', 'three'));
    informer.start();
    await informer.waitForSync();
    expect(informer.hasSynced).toBe(true);
    expect(informer.list().map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      'one/a',
    ]);
    await informer.stop();
  });
});

describe('informer log levels', () => {
  function capture() {
    const lines: Array<{ level: number; msg: string }> = [];
    const logger = pino(
      { level: 'debug' },
      { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) },
    );
    return { lines, logger };
  }

  it('a few 429s in a row (a CRD whose storage is still initializing) are info; more become warnings', async () => {
    const { lines, logger } = capture();
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const informer = new Informer(client, clock, logger, {
      type: resourceTypes.configMap,
      relistIntervalMs: 60_000,
      backoff: { baseMs: 1000, maxMs: 1000 },
    });
    for (let i = 0; i < 5; i++)
      client.failNext(
        'list',
        new KubeApiError(429, 'storage is (re)initializing', 'TooManyRequests'),
      );
    informer.start();
    for (let i = 0; i < 5; i++) {
      await flush();
      await clock.advance(1000);
    }
    await informer.waitForSync();
    const retries = lines.filter((l) => /retry|restarting/.test(l.msg)).map((l) => l.level);
    expect(retries).toEqual([30, 30, 30, 40, 40]);
    await informer.stop();
  });

  it('any other list/watch error is a warning the first time', async () => {
    const { lines, logger } = capture();
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const informer = new Informer(client, clock, logger, {
      type: resourceTypes.configMap,
      relistIntervalMs: 60_000,
      backoff: { baseMs: 1000, maxMs: 1000 },
    });
    client.failNext('list', new KubeApiError(500, 'etcd hiccup'));
    informer.start();
    await flush();
    await clock.advance(1000);
    await informer.waitForSync();
    expect(lines.filter((l) => /restarting/.test(l.msg)).map((l) => l.level)).toEqual([40]);
    await informer.stop();
  });
});
