// What the operator's caches hold: only objects a Portcullis object owns (the managed-by label
// is no proof, anyone can set it), Secrets and ConfigMaps as metadata only, and no kubectl copy
// of the whole object. The k8s tier (operator-cache-memory) floods a real API server the same way.
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { Applier } from '../../operator/runtime/applier.ts';
import { Informer } from '../../operator/runtime/informer.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { MANAGED_SELECTOR, ownedByPortcullis } from '../../operator/resources/shared/metadata.ts';
import { ManualClock, flush } from '../harness/manual-clock.ts';

const log = pino({ level: 'silent' });
const routeOwner = {
  apiVersion: 'portcullis.dev/v1alpha1',
  kind: 'RateLimitRoute',
  name: 'web',
  uid: 'u-1',
  controller: true,
};

function secret(name: string, owned: boolean, extra: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: 'team-a',
      labels: { 'app.kubernetes.io/managed-by': 'portcullis-operator' },
      annotations: extra,
      ...(owned ? { ownerReferences: [routeOwner] } : {}),
    },
    data: { big: Buffer.alloc(1024, 1).toString('base64') },
  };
}

function secretsInformer(client: MemoryKubeClient) {
  return new Informer(client, new ManualClock(), log, {
    type: resourceTypes.secret,
    labelSelector: MANAGED_SELECTOR,
    keep: ownedByPortcullis,
    metadataOnly: true,
    relistIntervalMs: 60_000,
    backoff: { baseMs: 1000, maxMs: 8000 },
  });
}

describe('operator caches: owned objects only, Secrets as metadata', () => {
  it('a labelled Secret no Portcullis object owns is not cached; an owned one is, without its data', async () => {
    const client = new MemoryKubeClient();
    client.put(secret('forged', false));
    client.put(
      secret('web-redis', true, {
        'kubectl.kubernetes.io/last-applied-configuration': 'x'.repeat(10_000),
      }),
    );
    const informer = secretsInformer(client);
    informer.start();
    await informer.waitForSync();
    expect(informer.list().map((s) => s.metadata.name)).toEqual(['web-redis']);
    const cached = informer.get('team-a', 'web-redis');
    expect(cached?.['data']).toBeUndefined();
    expect(cached?.metadata.annotations).toEqual({});
    await informer.stop();
  });

  it('watch events follow the same rule: a forged one never enters, an owned one that loses its owner leaves', async () => {
    const client = new MemoryKubeClient();
    const informer = secretsInformer(client);
    informer.start();
    await informer.waitForSync();
    await flush();
    client.put(secret('forged', false));
    client.put(secret('web-redis', true));
    await vi.waitFor(() => expect(informer.get('team-a', 'web-redis')).toBeDefined(), {
      timeout: 5000,
    });
    expect(informer.get('team-a', 'forged')).toBeUndefined();
    client.put(secret('web-redis', false));
    await vi.waitFor(() => expect(informer.get('team-a', 'web-redis')).toBeUndefined(), {
      timeout: 5000,
    });
    expect(informer.size).toBe(0);
    await informer.stop();
  });

  it('an owner reference to another API group does not count', () => {
    const fake = secret('x', false);
    fake.metadata.ownerReferences = [{ ...routeOwner, apiVersion: 'example.com/v1' }];
    expect(ownedByPortcullis(fake)).toBe(false);
    expect(ownedByPortcullis(secret('y', true))).toBe(true);
  });

  it('apply-if-different on a metadata-only cache: the same desired Secret is not written again, a changed one is', async () => {
    const client = new MemoryKubeClient();
    const informer = secretsInformer(client);
    informer.start();
    await informer.waitForSync();
    const applier = new Applier(client);
    const desired = secret('web-redis', true);
    expect((await applier.apply(desired, informer)).changed).toBe(true);
    await vi.waitFor(() => expect(informer.get('team-a', 'web-redis')).toBeDefined(), {
      timeout: 5000,
    });
    expect((await applier.apply(desired, informer)).changed).toBe(false);
    const changed = { ...desired, data: { big: 'AAAA' } };
    expect((await applier.apply(changed, informer)).changed).toBe(true);
    expect(client.peek(resourceTypes.secret, 'team-a', 'web-redis')?.['data']).toEqual({
      big: 'AAAA',
    });
    await informer.stop();
  });
});
