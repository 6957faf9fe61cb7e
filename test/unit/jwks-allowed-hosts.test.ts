// The JWKS host allow-list: a route's own jwt issuer makes its sidecars fetch keys from the URL it
// names, so the platform may list the hosts allowed to publish keys. The sidecar refuses a config
// whose jwksUrl is elsewhere; the operator renders the list into such routes (from
// PORTCULLIS_JWKS_ALLOWED_HOSTS, Helm value routes.jwksAllowedHosts) and marks a route naming
// another host InvalidSpec, writing no children. The namespace's own auth server is not held to it.
import { describe, expect, it } from 'vitest';
import { parseSidecarConfig, type SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { resourceSettings } from '../../operator/config-settings.ts';
import { loadOperatorConfig } from '../../operator/config.ts';
import { renderSidecarConfig } from '../../operator/resources/route/config-map.ts';
import type { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { parseSidecarConfigText } from '../../lib/config/sidecar.ts';
import { route, routeObject, routeReconciler, settings } from './operator-fixtures.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- objects of the memory API, read in assertions

const jwt = (jwksUrl: string, jwksAllowedHosts?: string[]): SidecarConfigInput => ({
  listen: { port: 8080 },
  upstream: { url: 'http://127.0.0.1:8081' },
  route: { id: 'all' },
  limiter: {
    replenishRate: 1,
    burstCapacity: 10,
    key: 'jwt',
    jwt: {
      issuer: 'https://id.example.com',
      audience: 'api',
      jwksUrl,
      ...(jwksAllowedHosts ? { jwksAllowedHosts } : {}),
    },
  },
});
const ALLOWED = ['id.example.com', 'keys.example.org'];
const ownIssuer = (url: string) => ({
  limiter: { replenishRate: 1, burstCapacity: 10, key: { source: 'jwt', issuer: { url } } },
});

describe('sidecar: jwt.jwksAllowedHosts', () => {
  it('takes a jwksUrl whose host name is listed (any port, any case), refuses another, and takes any without a list', () => {
    expect(() =>
      parseSidecarConfig(jwt('https://ID.example.com:8443/jwks.json', ALLOWED)),
    ).not.toThrow();
    expect(() =>
      parseSidecarConfig(jwt('http://169.254.169.254/latest/meta-data', ALLOWED)),
    ).toThrow(/jwksUrl.*not in jwksAllowedHosts/);
    // A listed name as a subdomain or with a userinfo trick is another host.
    expect(() =>
      parseSidecarConfig(jwt('https://id.example.com.evil.test/jwks.json', ALLOWED)),
    ).toThrow(/not in jwksAllowedHosts/);
    expect(() =>
      parseSidecarConfig(jwt('https://id.example.com@evil.test/jwks.json', ALLOWED)),
    ).toThrow(/not in jwksAllowedHosts/);
    expect(() => parseSidecarConfig(jwt('http://169.254.169.254/latest/meta-data'))).not.toThrow();
  });
});

describe('operator: PORTCULLIS_JWKS_ALLOWED_HOSTS', () => {
  const listed = { ...settings, jwksAllowedHosts: ALLOWED };

  it('is read from the environment as a comma-separated list, empty by default', () => {
    expect(
      resourceSettings(
        loadOperatorConfig({
          PORTCULLIS_JWKS_ALLOWED_HOSTS: ' id.example.com, keys.example.org ,',
        }),
      ).jwksAllowedHosts,
    ).toEqual(ALLOWED);
    expect(resourceSettings(loadOperatorConfig({})).jwksAllowedHosts).toEqual([]);
  });

  it("renders the list into a route with its own issuer; the namespace's auth server needs none", () => {
    const own = parseSidecarConfigText(
      renderSidecarConfig(route('all', ownIssuer('https://id.example.com')), listed),
    );
    expect(own.limiter.jwt?.jwksAllowedHosts).toEqual(ALLOWED);
    const local = parseSidecarConfigText(
      renderSidecarConfig(
        route('all', { limiter: { replenishRate: 1, burstCapacity: 10, key: { source: 'jwt' } } }),
        listed,
      ),
    );
    expect(local.limiter.jwt?.jwksUrl).toMatch(/^http:\/\/portcullis-auth-server\.team-a\.svc/);
    expect(local.limiter.jwt?.jwksAllowedHosts).toBeUndefined();
  });

  it('marks a route whose issuer publishes keys elsewhere InvalidSpec and writes no children', async () => {
    const { client, reconcile } = await routeReconciler({ settings: listed });
    client.put(routeObject('all', ownIssuer('http://169.254.169.254')));
    await reconcile();
    const ready = (
      ((client as MemoryKubeClient).peek(resourceTypes.rateLimitRoute, 'team-a', 'all') as Obj)[
        'status'
      ]['conditions'] as Obj[]
    )[0];
    expect(ready).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(ready?.['message']).toContain('not in jwksAllowedHosts');
    expect(
      client.writes().filter((w) => w.subresource === undefined && w.kind !== 'Event'),
    ).toEqual([]);
  });
});
