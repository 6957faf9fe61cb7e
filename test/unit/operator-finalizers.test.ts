// Letting go of the operator's finalizers on deleted objects. A reconcile can work from a cache
// that still shows the finalizer after another worker let go and the object is gone: applying then
// would create the object again (the real API server refuses a route without spec, which the
// operator logged as a failed reconcile; a kind without required fields would come back empty).
import { describe, expect, it } from 'vitest';
import { SidecarInjection } from '../../operator/controllers/sidecar-injection.ts';
import { INJECTION_FINALIZER } from '../../operator/resources/route/injection.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { routeObject, settings } from './operator-fixtures.ts';

/** A route that injects into Deployment shop, deleted and holding the injection finalizer. */
const deletedRoute = (): KubeObject => {
  const raw = routeObject('injected', { targetRef: { name: 'shop' } });
  raw.metadata.finalizers = [INJECTION_FINALIZER];
  raw.metadata.deletionTimestamp = '2026-11-28T12:00:00Z';
  return raw;
};

describe('finalizers let go on deleted objects', () => {
  it('a route already gone (a stale cached copy) is not applied again', async () => {
    const client = new MemoryKubeClient();
    await new SidecarInjection(client, settings).finalize(deletedRoute());
    expect(await client.get(resourceTypes.rateLimitRoute, 'team-a', 'injected')).toBeUndefined();
    expect(client.writes('RateLimitRoute')).toEqual([]);
  });

  it('a route still holding the finalizer lets go of it', async () => {
    const client = new MemoryKubeClient();
    const { deletionTimestamp: _deleting, ...metadata } = deletedRoute().metadata;
    await client.create({ ...deletedRoute(), metadata });
    await new SidecarInjection(client, settings).finalize(deletedRoute());
    const live = await client.get(resourceTypes.rateLimitRoute, 'team-a', 'injected');
    expect(live?.metadata.finalizers ?? []).toEqual([]);
    expect(client.writes('RateLimitRoute').map((w) => w.verb)).toEqual(['create', 'apply']);
  });
});
