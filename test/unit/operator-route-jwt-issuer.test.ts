// A route keyed on a verified token without an issuer of its own trusts the namespace's auth
// server. The operator runs that server only while an OAuthClient exists in the namespace, so a
// route reconciled without it gets a Warning Event saying why its requests will be 503s.
import { describe, expect, it } from 'vitest';
import { authServerDeployment } from '../../operator/resources/auth/deployment.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { oauthClient, routeObject, settings, routeReconciler } from './operator-fixtures.ts';

describe('route with a jwt key and no issuer of its own', () => {
  async function reconcileRoute(limiter: Record<string, unknown>, withAuthServer: boolean) {
    const client = new MemoryKubeClient();
    if (withAuthServer) client.put(authServerDeployment('team-a', settings, [oauthClient()]));
    const { events, reconcile } = await routeReconciler({ client });
    client.put(routeObject('all', { limiter }));
    await reconcile();
    return events.list.filter((e) => e.type === 'Warning');
  }

  it('is warned about, naming the namespace, when no auth server runs there', async () => {
    const warnings = await reconcileRoute(
      { replenishRate: 1, burstCapacity: 10, key: { source: 'jwt' } },
      false,
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ reason: 'AuthServerMissing' });
    expect(warnings[0]?.message).toMatch(/auth server of namespace team-a.*OAuthClient.*503/);
  });

  it('is quiet once the auth server runs, with an issuer of its own, and with the header key', async () => {
    expect(
      await reconcileRoute({ replenishRate: 1, burstCapacity: 10, key: { source: 'jwt' } }, true),
    ).toEqual([]);
    expect(
      await reconcileRoute(
        {
          replenishRate: 1,
          burstCapacity: 10,
          key: { source: 'jwt', issuer: { url: 'https://id.example.com' } },
        },
        false,
      ),
    ).toEqual([]);
    expect(await reconcileRoute({ replenishRate: 1, burstCapacity: 10 }, false)).toEqual([]);
  });
});
