// An OAuthClient's name is a label value of its Secret (app.kubernetes.io/instance,
// portcullis.dev/oauth-client), at most 63 characters: a longer name is refused by the API server
// (CEL on the CRD) and by the operator's schema with the same message, and the operator writes
// nothing for it, instead of failing on every apply of the Secret.
import { describe, expect, it } from 'vitest';
import {
  OAUTH_CLIENT_NAME_RULE,
  oauthClientCrd,
  oauthClientSchema,
} from '../../operator/api/index.ts';
import { OAuthClientReconciler } from '../../operator/controllers/oauth-client-reconciler.ts';
import { Applier } from '../../operator/runtime/applier.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { buildCrd } from '../../scripts/crds/build-crd.ts';
import { flush, ManualClock } from '../harness/manual-clock.ts';
import { clientObject, recordingEvents, silent, startCaches } from './operator-fixtures.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- objects of the memory API, read in assertions

const long = 'a'.repeat(64);

describe('OAuthClient name length', () => {
  it('63 characters pass, 64 are refused by the schema with the rule message', () => {
    expect(oauthClientSchema.safeParse(clientObject('a'.repeat(63))).success).toBe(true);
    expect(
      oauthClientSchema.safeParse(clientObject(long)).error?.issues.map((i) => i.message),
    ).toEqual([OAUTH_CLIENT_NAME_RULE]);
  });

  it('the CRD carries the same rule as CEL on the object', () => {
    const root = (buildCrd(oauthClientCrd) as Obj)['spec']['versions'][0]['schema'][
      'openAPIV3Schema'
    ];
    expect(root['x-kubernetes-validations']).toContainEqual({
      rule: 'self.metadata.name.size() <= 63',
      message: OAUTH_CLIENT_NAME_RULE,
    });
  });

  it('the operator marks such a client InvalidSpec and writes no Secret', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const caches = await startCaches(client, clock);
    try {
      const reconciler = new OAuthClientReconciler({
        client,
        applier: new Applier(client),
        caches,
        clock,
        events: recordingEvents(),
        log: silent,
      });
      client.put(clientObject(long));
      await flush();
      await reconciler.reconcile(`team-a/${long}`);
      await flush();
      expect(client.writes('Secret')).toEqual([]);
      const ready = (
        (client.peek(resourceTypes.oauthClient, 'team-a', long) as Obj)['status'][
          'conditions'
        ] as Obj[]
      )[0];
      expect(ready).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
      expect(ready?.['message']).toContain(OAUTH_CLIENT_NAME_RULE);
    } finally {
      await caches.stop();
    }
  });
});
