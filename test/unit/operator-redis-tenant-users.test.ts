// The reconcilers with per-namespace Redis users (a recording stand-in for operator/redis/; the
// real one runs against redis-server in test/integration/redis-tenant-users.test.ts and the whole
// operator in test/k8s/operator-redis-tenants.test.ts): a namespace's Secrets hold its own user's
// URL, never the admin's, and its last route or OAuthClient takes the user with it (routes and
// RateLimitPolicies share the bucket user: the last of either to be deleted or to move to a Redis
// of its own). The pure pieces: the ACL rules, the derived passwords and URLs.
import { afterEach, describe, expect, it } from 'vitest';
import { AuthServerReconciler } from '../../operator/controllers/auth-server-reconciler.ts';
import { RateLimitRouteReconciler } from '../../operator/controllers/rate-limit-route-reconciler.ts';
import { RateLimitPolicyReconciler } from '../../operator/controllers/rate-limit-policy-reconciler.ts';
import type { TenantRedisUsers } from '../../operator/redis/tenant-redis-users.ts';
import type { ResourceSettings } from '../../operator/resources/shared/settings.ts';
import { Applier } from '../../operator/runtime/applier.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import {
  tenantAclRules,
  tenantPassword,
  tenantRedisUrl,
  type TenantPurpose,
} from '../../lib/tenancy/tenant-acl.ts';
import { ManualClock, flush } from '../harness/manual-clock.ts';
import {
  clientObject,
  recordingEvents,
  routeObject,
  settings as baseSettings,
  silent,
  startCaches,
} from './operator-fixtures.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered objects read in assertions

const ADMIN = 'redis://:admin-pw-7e2a@portcullis-redis.portcullis-system.svc:6379';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const settings: ResourceSettings = {
  ...baseSettings,
  defaultRedisUrl: undefined,
  authRedisUrl: undefined,
  defaultRedisSecret: { namespace: 'portcullis-system', name: 'creds', key: 'redis-url' },
  authRedisSecret: { namespace: 'portcullis-system', name: 'creds', key: 'redis-url' },
};
const source: KubeObject = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'creds', namespace: 'portcullis-system' },
  data: { 'redis-url': b64(ADMIN) },
};

const OWN_REDIS = { url: 'redis://own-redis.team-a.svc:6379' };

function policyObject(name: string, redis?: typeof OWN_REDIS): KubeObject {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitPolicy',
    metadata: { name, namespace: 'team-a', uid: `uid-${name}` },
    spec: {
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop' }],
      limiter: { replenishRate: 1, burstCapacity: 10 },
      ...(redis === undefined ? {} : { redis }),
    },
  };
}

/** Records grants and revokes; grants answer a URL naming the namespace's user. */
function recordingUsers(): TenantRedisUsers & { calls: string[]; down: boolean } {
  const calls: string[] = [];
  return {
    calls,
    down: false,
    async grant(adminUrl, ns, purpose) {
      if (this.down) throw new Error('connect ECONNREFUSED');
      calls.push(`grant ${purpose} ${ns} ${adminUrl === ADMIN ? 'admin' : adminUrl}`);
      return `redis://portcullis-${purpose}-${ns}:pw@portcullis-redis.portcullis-system.svc:6379`;
    },
    async revoke(adminUrl, ns, purpose) {
      calls.push(`revoke ${purpose} ${ns} ${adminUrl === ADMIN ? 'admin' : adminUrl}`);
    },
    async close() {},
  };
}

describe('reconciling with per-namespace Redis users', () => {
  const stops: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  async function setup() {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const caches = await startCaches(client, clock);
    stops.push(caches.stop);
    const users = recordingUsers();
    const events = recordingEvents();
    const deps = {
      applier: new Applier(client),
      caches,
      settings,
      clock,
      events,
      client,
      log: silent,
      redisUsers: users,
    };
    const routes = new RateLimitRouteReconciler(deps);
    const policies = new RateLimitPolicyReconciler(deps);
    const auth = new AuthServerReconciler(deps);
    const run = async (fn: () => Promise<unknown>) => {
      await flush();
      await fn();
      await flush();
    };
    client.put(source);
    return {
      client,
      users,
      policy: (key: string) => run(() => policies.reconcile(key)),
      route: (key = 'team-a/all') => run(() => routes.reconcile(key)),
      auth: (ns = 'team-a') => run(() => auth.reconcile(ns)),
    };
  }

  it("a route's Secret holds its namespace's user's URL, never the admin URL; the last route of the namespace deletes the user", async () => {
    const { client, users, route } = await setup();
    client.put(routeObject('all'));
    client.put(routeObject('other'));
    await route('team-a/all');
    await route('team-a/other');
    const data = (client.peek(resourceTypes.secret, 'team-a', 'all-redis') as Obj)['data'];
    expect(Buffer.from(data['url'], 'base64').toString()).toBe(
      'redis://portcullis-bucket-team-a:pw@portcullis-redis.portcullis-system.svc:6379',
    );
    expect(JSON.stringify(data)).not.toContain(b64(ADMIN));
    expect(users.calls).toEqual(['grant bucket team-a admin', 'grant bucket team-a admin']);
    await client.delete(resourceTypes.rateLimitRoute, 'team-a', 'all');
    await route('team-a/all');
    expect(users.calls.filter((c) => c.startsWith('revoke'))).toEqual([]);
    await client.delete(resourceTypes.rateLimitRoute, 'team-a', 'other');
    await route('team-a/other');
    expect(users.calls.filter((c) => c.startsWith('revoke'))).toEqual([
      'revoke bucket team-a admin',
    ]);
  });

  it('a RateLimitPolicy on the default Redis keeps the namespace user when the last route goes (its decision pods use it)', async () => {
    const { client, users, route, policy } = await setup();
    client.put(routeObject('all'));
    await route('team-a/all');
    client.put(policyObject('orders'));
    await client.delete(resourceTypes.rateLimitRoute, 'team-a', 'all');
    await route('team-a/all');
    expect(users.calls.filter((c) => c.startsWith('revoke'))).toEqual([]);
    // The policy goes too: the last user of the namespace's Redis user takes it along.
    await client.delete(resourceTypes.rateLimitPolicy, 'team-a', 'orders');
    await policy('team-a/orders');
    expect(users.calls.filter((c) => c.startsWith('revoke'))).toEqual([
      'revoke bucket team-a admin',
    ]);
  });

  /** The live object (finalizers and all) with spec.redis set: it moves to a Redis of its own. */
  function moveOff(
    client: MemoryKubeClient,
    type: typeof resourceTypes.rateLimitRoute | typeof resourceTypes.rateLimitPolicy,
    name: string,
  ): void {
    const live = client.peek(type, 'team-a', name) as KubeObject;
    client.put({ ...live, spec: { ...(live['spec'] as Obj), redis: OWN_REDIS } });
  }
  const revokes = (calls: string[]) => calls.filter((c) => c.startsWith('revoke'));

  it('a RateLimitPolicy moving to a Redis of its own takes the namespace user along when nothing else uses it', async () => {
    const { client, users, policy } = await setup();
    client.put(policyObject('orders'));
    await policy('team-a/orders');
    expect(users.calls).toEqual(['grant bucket team-a admin']);
    expect(client.peek(resourceTypes.secret, 'team-a', 'orders-decision-redis')).toBeDefined();
    moveOff(client, resourceTypes.rateLimitPolicy, 'orders');
    await policy('team-a/orders');
    expect(revokes(users.calls)).toEqual(['revoke bucket team-a admin']);
    expect(client.peek(resourceTypes.secret, 'team-a', 'orders-decision-redis')).toBeUndefined();
    // Its copy is gone: later reconciles leave the user (maybe made again for another) alone.
    await policy('team-a/orders');
    expect(revokes(users.calls)).toEqual(['revoke bucket team-a admin']);
  });

  it('a RateLimitPolicy moving off the default Redis keeps the namespace user while a route uses it; the route moving off after it takes it along', async () => {
    const { client, users, route, policy } = await setup();
    client.put(routeObject('all'));
    client.put(policyObject('orders'));
    await route('team-a/all');
    await policy('team-a/orders');
    moveOff(client, resourceTypes.rateLimitPolicy, 'orders');
    await policy('team-a/orders');
    expect(revokes(users.calls)).toEqual([]);
    moveOff(client, resourceTypes.rateLimitRoute, 'all');
    await route('team-a/all');
    expect(revokes(users.calls)).toEqual(['revoke bucket team-a admin']);
  });

  it('a route moving off the default Redis keeps the namespace user while a RateLimitPolicy uses it; the policy moving off after it takes it along', async () => {
    const { client, users, route, policy } = await setup();
    client.put(routeObject('all'));
    client.put(policyObject('orders'));
    await route('team-a/all');
    await policy('team-a/orders');
    moveOff(client, resourceTypes.rateLimitRoute, 'all');
    await route('team-a/all');
    expect(revokes(users.calls)).toEqual([]);
    expect(client.peek(resourceTypes.secret, 'team-a', 'all-redis')).toBeUndefined();
    moveOff(client, resourceTypes.rateLimitPolicy, 'orders');
    await policy('team-a/orders');
    expect(revokes(users.calls)).toEqual(['revoke bucket team-a admin']);
  });

  it("the auth server's Secret holds its namespace's auth user's URL; its last OAuthClient deletes the user", async () => {
    const { client, users, auth } = await setup();
    client.put(clientObject('app', 'team-a'));
    await auth();
    const data = (client.peek(resourceTypes.secret, 'team-a', 'portcullis-auth-redis') as Obj)[
      'data'
    ];
    expect(Buffer.from(data['url'], 'base64').toString()).toBe(
      'redis://portcullis-auth-team-a:pw@portcullis-redis.portcullis-system.svc:6379',
    );
    expect(users.calls).toEqual(['grant auth team-a admin']);
    await client.delete(resourceTypes.oauthClient, 'team-a', 'app');
    await auth();
    expect(users.calls).toEqual(['grant auth team-a admin', 'revoke auth team-a admin']);
  });
});

describe('when Redis cannot make the user', () => {
  const stops: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  it('the route and auth server are applied all the same, a Warning names the cause, and the user follows on a retry', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const caches = await startCaches(client, clock);
    stops.push(caches.stop);
    const users = recordingUsers();
    const events = recordingEvents();
    const deps = {
      applier: new Applier(client),
      caches,
      settings,
      clock,
      events,
      client,
      log: silent,
      redisUsers: users,
    };
    const routes = new RateLimitRouteReconciler(deps);
    const auth = new AuthServerReconciler(deps);
    client.put(source);
    client.put(routeObject('all'));
    client.put(clientObject('app', 'team-a'));
    users.down = true;
    await flush();
    expect(await routes.reconcile('team-a/all')).toEqual({ waiting: true });
    expect((await auth.reconcile('team-a')).requeueAfterMs).toBeLessThanOrEqual(10_000);
    await flush();
    expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeDefined();
    expect(client.peek(resourceTypes.deployment, 'team-a', 'portcullis-auth-server')).toBeDefined();
    expect(client.peek(resourceTypes.secret, 'team-a', 'all-redis')).toBeUndefined();
    expect(events.list.filter((e) => e.reason === 'RedisUserFailed').map((e) => e.message)).toEqual(
      [expect.stringContaining('ECONNREFUSED'), expect.stringContaining('ECONNREFUSED')],
    );
    users.down = false;
    await routes.reconcile('team-a/all');
    await auth.reconcile('team-a');
    await flush();
    expect(client.peek(resourceTypes.secret, 'team-a', 'all-redis')).toBeDefined();
    expect(client.peek(resourceTypes.secret, 'team-a', 'portcullis-auth-redis')).toBeDefined();
  });
});

describe('the namespace user (lib/tenancy/tenant-acl.ts)', () => {
  it.each(['bucket', 'auth'] as const)(
    'the %s user: one key pattern, its namespace, no channel, and no command that lists, wipes or administers',
    (purpose: TenantPurpose) => {
      const rules = tenantAclRules('team-a', purpose, 'pw');
      expect(rules.slice(0, 2)).toEqual(['reset', 'on']);
      expect(
        rules.filter(
          (r) =>
            r.startsWith('~') ||
            r.startsWith('%') ||
            r.startsWith('&') ||
            r === 'allkeys' ||
            r === 'allchannels',
        ),
      ).toEqual([`~portcullis:${purpose}:team-a:*`]);
      expect(rules).toContain('resetchannels');
      expect(rules).not.toContain('nopass');
      expect(rules.some((r) => r.startsWith('>'))).toBe(false); // the password only as its hash
      const allowed = rules.filter((r) => r.startsWith('+')).map((r) => r.slice(1));
      for (const forbidden of [
        'keys',
        'scan',
        'randomkey',
        'flushall',
        'flushdb',
        'config',
        'monitor',
        'shutdown',
        'acl',
        'client|kill',
        'client|list',
        'debug',
        'script|flush',
        'replicaof',
        '@all',
        '@admin',
        '@dangerous',
      ])
        expect(allowed).not.toContain(forbidden);
    },
  );

  it('passwords differ per namespace, purpose and admin password, and are stable; the URL keeps host, port, db and TLS', () => {
    expect(tenantPassword('admin', 'team-a', 'bucket')).toBe(
      tenantPassword('admin', 'team-a', 'bucket'),
    );
    const all = new Set([
      tenantPassword('admin', 'team-a', 'bucket'),
      tenantPassword('admin', 'team-b', 'bucket'),
      tenantPassword('admin', 'team-a', 'auth'),
      tenantPassword('rotated', 'team-a', 'bucket'),
    ]);
    expect(all.size).toBe(4);
    expect(
      tenantRedisUrl('rediss://default:admin@redis.example:6380/2', 'team-a', 'auth', 'p@ss'),
    ).toBe('rediss://portcullis-auth-team-a:p%40ss@redis.example:6380/2');
    expect(() => tenantPassword('admin', 'Team_A', 'auth')).toThrow(/not a namespace name/);
  });
});
