// Regression: the reconcilers read the previous Ready condition from the live status with an
// unchecked cast, so a status holding a null entry (a hand edit, an older operator) made every
// reconcile of that object throw a TypeError and retry forever. The conditions are now parsed.
import { afterEach, describe, expect, it } from 'vitest';
import { previousConditions } from '../../operator/controllers/conditions.ts';
import { OAuthClientReconciler } from '../../operator/controllers/oauth-client-reconciler.ts';
import { Applier } from '../../operator/runtime/applier.ts';
import { asRecord } from '../../operator/runtime/kube-object.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { ManualClock, flush } from '../harness/manual-clock.ts';
import { clientObject, recordingEvents, silent, startCaches } from './operator-fixtures.ts';

const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

const ready = {
  type: 'Ready',
  status: 'False',
  lastTransitionTime: '2026-01-01T00:00:00Z',
  reason: 'Registering',
  message: 'm',
};

describe('previous status conditions', () => {
  it('keeps the entries that parse and drops the rest', () => {
    expect(previousConditions({ conditions: [null, 7, { type: 'Ready' }, ready] })).toEqual([
      ready,
    ]);
    expect(previousConditions({ conditions: 'Ready' })).toEqual([]);
    expect(previousConditions(undefined)).toEqual([]);
  });

  it('a malformed status does not make the OAuthClient reconcile throw; a valid Ready condition is written', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const caches = await startCaches(client, clock);
    stops.push(caches.stop);
    const reconciler = new OAuthClientReconciler({
      client,
      applier: new Applier(client),
      caches,
      clock,
      events: recordingEvents(),
      log: silent,
    });
    client.put({ ...clientObject(), status: { conditions: [null, { type: 'Ready' }] } });
    await flush();
    await expect(reconciler.reconcile('team-a/demo-app')).resolves.toEqual({});
    const conditions = asRecord(
      client.peek(resourceTypes.oauthClient, 'team-a', 'demo-app')?.['status'],
    )?.['conditions'];
    expect(conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: 'Ready',
          status: 'False',
          reason: expect.any(String),
          lastTransitionTime: expect.stringMatching(/Z$/),
        }),
      ]),
    );
  });
});
