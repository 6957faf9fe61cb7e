// Redis credentials reach the rendered pods only through Secrets: with the operator's default (or
// auth) Redis given as a Secret key, no ConfigMap and no env value holds the URL or its password;
// the route's sidecar mounts an owned copy as redis.urlFile and the auth server takes REDIS_URL
// from a secretKeyRef to its copy. A URL with a password in the plain settings, or in a route's
// spec.redis.url (zod and the CRD's CEL rule alike), is refused.
import { afterEach, describe, expect, it } from 'vitest';
import {
  rateLimitRouteCrd,
  rateLimitRouteSchema,
  REDIS_URL_CREDENTIALS_PATTERN,
  REDIS_URL_CREDENTIALS_RULE,
} from '../../operator/api/index.ts';
import { resourceSettings } from '../../operator/config-settings.ts';
import { loadOperatorConfig } from '../../operator/config.ts';
import { AuthServerReconciler } from '../../operator/controllers/auth-server-reconciler.ts';
import { RateLimitRouteReconciler } from '../../operator/controllers/rate-limit-route-reconciler.ts';
import {
  authServerDeployment,
  authServerReplicas,
} from '../../operator/resources/auth/deployment.ts';
import { routeConfigMap } from '../../operator/resources/route/config-map.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { SIDECAR_CONFIG_KEY } from '../../operator/resources/route/names.ts';
import type { ResourceSettings } from '../../operator/resources/shared/settings.ts';
import { Applier } from '../../operator/runtime/applier.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { buildCrd } from '../../scripts/crds/build-crd.ts';
import { parseSidecarConfigText } from '../../lib/config/sidecar.ts';
import { ManualClock, flush } from '../harness/manual-clock.ts';
import {
  clientObject,
  recordingEvents,
  route,
  routeObject,
  settings as baseSettings,
  silent,
  startCaches,
} from './operator-fixtures.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered objects read in assertions

const PASSWORD = 'pw-3c1f9e0d7b';
const URL = `redis://:${PASSWORD}@portcullis-redis.portcullis-system.svc:6379`;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const settings: ResourceSettings = {
  ...baseSettings,
  defaultRedisUrl: undefined,
  authRedisUrl: undefined,
  defaultRedisSecret: {
    namespace: 'portcullis-system',
    name: 'portcullis-redis-credentials',
    key: 'redis-url',
  },
  authRedisSecret: {
    namespace: 'portcullis-system',
    name: 'portcullis-redis-credentials',
    key: 'auth-redis-url',
  },
};
const sourceSecret: KubeObject = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'portcullis-redis-credentials', namespace: 'portcullis-system' },
  data: {
    'redis-url': b64(URL),
    'auth-redis-url': b64(URL.replace('portcullis-redis', 'portcullis-auth-redis')),
  },
};

/** Every env `value` of every container of a workload. */
function envValues(workload: KubeObject): string[] {
  const containers: Obj[] = (workload as Obj)['spec']['template']['spec']['containers'];
  return containers
    .flatMap((c) => (c['env'] ?? []) as Obj[])
    .flatMap((e) => (typeof e['value'] === 'string' ? [e['value'] as string] : []));
}

describe('operator settings for Redis credentials', () => {
  it('refuses a URL with a password in PORTCULLIS_DEFAULT_REDIS_URL or PORTCULLIS_AUTH_REDIS_URL, naming the Secret setting', () => {
    expect(() =>
      loadOperatorConfig({ PORTCULLIS_DEFAULT_REDIS_URL: `redis://:${PASSWORD}@redis:6379` }),
    ).toThrow(/PORTCULLIS_DEFAULT_REDIS_URL: holds credentials.*PORTCULLIS_DEFAULT_REDIS_SECRET/);
    expect(() =>
      loadOperatorConfig({ PORTCULLIS_AUTH_REDIS_URL: `rediss://user:${PASSWORD}@redis:6379` }),
    ).toThrow(/PORTCULLIS_AUTH_REDIS_URL: holds credentials.*PORTCULLIS_AUTH_REDIS_SECRET/);
    expect(() =>
      loadOperatorConfig({ PORTCULLIS_DEFAULT_REDIS_URL: 'redis://redis:6379' }),
    ).not.toThrow();
  });

  it('reads name/key Secret references in the operator namespace; the auth servers fall back to the default one', () => {
    const s = resourceSettings(
      loadOperatorConfig({
        POD_NAMESPACE: 'portcullis-system',
        PORTCULLIS_DEFAULT_REDIS_SECRET: 'creds/redis-url',
      }),
    );
    expect(s.defaultRedisSecret).toEqual({
      namespace: 'portcullis-system',
      name: 'creds',
      key: 'redis-url',
    });
    expect(s.authRedisSecret).toEqual(s.defaultRedisSecret);
    expect(s.authRedisUrl).toBeUndefined();
    const own = resourceSettings(
      loadOperatorConfig({
        POD_NAMESPACE: 'ns',
        PORTCULLIS_DEFAULT_REDIS_SECRET: 'creds/redis-url',
        PORTCULLIS_AUTH_REDIS_SECRET: 'creds/auth-redis-url',
      }),
    );
    expect(own.authRedisSecret).toEqual({ namespace: 'ns', name: 'creds', key: 'auth-redis-url' });
    expect(() => loadOperatorConfig({ PORTCULLIS_DEFAULT_REDIS_SECRET: 'no-key' })).toThrow(
      /PORTCULLIS_DEFAULT_REDIS_SECRET: name\/key/,
    );
    expect(() =>
      loadOperatorConfig({
        PORTCULLIS_DEFAULT_REDIS_SECRET: 'a/b',
        PORTCULLIS_DEFAULT_REDIS_URL: 'redis://r:6379',
      }),
    ).toThrow(/not both/);
  });
});

describe("a route's spec.redis.url", () => {
  const withUrl = (url: string) => routeObject('all', { redis: { url } });

  it('refuses a URL with a password (or a user), pointing at spec.redis.secretRef; zod and the CRD say the same', () => {
    for (const url of [
      `redis://:${PASSWORD}@redis:6379`,
      `rediss://default:${PASSWORD}@redis:6380/0`,
      'redis://user@redis:6379',
    ]) {
      const parsed = rateLimitRouteSchema.safeParse(withUrl(url));
      expect(
        parsed.error?.issues.map((i) => [i.path.join('.'), i.message]),
        url,
      ).toEqual([['spec.redis.url', REDIS_URL_CREDENTIALS_RULE]]);
    }
    expect(REDIS_URL_CREDENTIALS_RULE).toContain('spec.redis.secretRef');
    for (const url of [
      'redis://redis:6379',
      'rediss://redis.example:6380/0',
      'redis://redis:6379/0?name=a@b',
    ])
      expect(rateLimitRouteSchema.safeParse(withUrl(url)).success, url).toBe(true);
    const crd = buildCrd(rateLimitRouteCrd) as Obj;
    const redisNode =
      crd['spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec']['properties'][
        'redis'
      ];
    // On the object with a fieldPath: a rule on the string itself would have the API server quote the URL in its error.
    expect(redisNode['x-kubernetes-validations']).toContainEqual({
      rule: `!has(self.url) || !self.url.matches(r'${REDIS_URL_CREDENTIALS_PATTERN}')`,
      message: REDIS_URL_CREDENTIALS_RULE,
      fieldPath: '.url',
    });
    expect(redisNode['properties']['url']['x-kubernetes-validations']).toBeUndefined();
  });

  it('a route given one anyway (e.g. stored before the rule) is InvalidSpec: no ConfigMap, and the password in no message', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const caches = await startCaches(client, clock);
    try {
      const events = recordingEvents();
      const reconciler = new RateLimitRouteReconciler({
        applier: new Applier(client),
        caches,
        settings: baseSettings,
        clock,
        events,
        client,
        log: silent,
      });
      client.put(withUrl(`redis://:${PASSWORD}@redis:6379`));
      await flush();
      await reconciler.reconcile('team-a/all');
      await flush();
      expect(client.writes().filter((w) => w.kind !== 'RateLimitRoute')).toEqual([]);
      const status = (client.peek(resourceTypes.rateLimitRoute, 'team-a', 'all') as Obj)['status'];
      expect(status['conditions'][0]).toMatchObject({
        reason: 'InvalidSpec',
        message: expect.stringContaining(`spec.redis.url: ${REDIS_URL_CREDENTIALS_RULE}`),
      });
      expect(JSON.stringify(status)).not.toContain(PASSWORD);
      expect(JSON.stringify(events.list)).not.toContain(PASSWORD);
    } finally {
      await caches.stop();
    }
  });
});

describe('rendering with the Redis URL in a Secret', () => {
  it("a route naming no Redis: the sidecar config says urlFile, the Deployment mounts the route's copy there", () => {
    const r = route();
    const configMap = routeConfigMap(r, settings);
    const text = (configMap['data'] as Record<string, string>)[SIDECAR_CONFIG_KEY] ?? '';
    expect(parseSidecarConfigText(text).redis).toMatchObject({
      urlFile: '/etc/portcullis/redis/url',
    });
    expect(JSON.stringify(configMap)).not.toContain('redis://');
    const deployment = routeDeployment(r, settings, text);
    const pod = (deployment as Obj)['spec']['template']['spec'];
    expect(pod['volumes']).toContainEqual({
      name: 'redis-url',
      secret: { secretName: 'all-redis', items: [{ key: 'url', path: 'url' }], defaultMode: 0o440 },
    });
    expect(JSON.stringify(deployment)).not.toContain(PASSWORD);
  });

  it('a route with its own spec.redis keeps it: no copy of the default mounted', () => {
    const pod = (
      routeDeployment(route('all', { redis: { url: 'redis://team:6379' } }), settings, 'x') as Obj
    )['spec']['template']['spec'];
    expect(pod['volumes'].map((v: Obj) => v['name'])).not.toContain('redis-url');
  });

  it('the auth server takes REDIS_URL from a secretKeyRef to its copy, and runs several replicas with it', () => {
    const deployment = authServerDeployment('team-a', settings, []);
    const env: Obj[] = (deployment as Obj)['spec']['template']['spec']['containers'][0]['env'];
    expect(env.find((e) => e['name'] === 'REDIS_URL')).toEqual({
      name: 'REDIS_URL',
      valueFrom: { secretKeyRef: { name: 'portcullis-auth-redis', key: 'url' } },
    });
    expect(envValues(deployment).some((v) => v.includes('redis://'))).toBe(false);
    expect(authServerReplicas(settings)).toBe(settings.authServerReplicas);
  });
});

describe('reconciling with the Redis URL in a Secret', () => {
  const stops: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  async function setup() {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const caches = await startCaches(client, clock);
    stops.push(caches.stop);
    const events = recordingEvents();
    const applier = new Applier(client);
    const routes = new RateLimitRouteReconciler({
      applier,
      caches,
      settings,
      clock,
      events,
      client,
      log: silent,
    });
    const auth = new AuthServerReconciler({
      client,
      applier,
      caches,
      settings,
      clock,
      events,
      log: silent,
    });
    const run = async (fn: () => Promise<unknown>) => {
      await flush();
      await fn();
      await flush();
    };
    return {
      client,
      events,
      routes: () => run(() => routes.reconcile('team-a/all')),
      auth: () => run(() => auth.reconcile('team-a')),
    };
  }

  const allOf = async (
    client: MemoryKubeClient,
    type: (typeof resourceTypes)[keyof typeof resourceTypes],
  ) => (await client.list(type)).items;

  it("copies the source key into the route's namespace, owned by the route, and no ConfigMap or env value holds the password", async () => {
    const { client, events, routes } = await setup();
    client.put(sourceSecret);
    client.put(routeObject());
    await routes();
    const copy = client.peek(resourceTypes.secret, 'team-a', 'all-redis') as Obj;
    expect(copy['data']).toEqual({ url: b64(URL) });
    expect(copy['metadata']['ownerReferences']).toEqual([
      expect.objectContaining({ kind: 'RateLimitRoute', name: 'all', controller: true }),
    ]);
    for (const cm of await allOf(client, resourceTypes.configMap))
      expect(JSON.stringify(cm)).not.toContain(PASSWORD);
    for (const dep of await allOf(client, resourceTypes.deployment))
      for (const v of envValues(dep)) expect(v).not.toContain(PASSWORD);
    expect(events.list.filter((e) => e.type === 'Warning')).toEqual([]);
    // Level-based: a reconcile with nothing changed writes nothing, the copy included.
    const before = client.writes().length;
    await routes();
    expect(client.writes().slice(before)).toEqual([]);
  });

  it('follows a rotated source, and deletes the copy when the route names its own Redis', async () => {
    const { client, routes } = await setup();
    client.put(sourceSecret);
    client.put(routeObject());
    await routes();
    client.put({ ...sourceSecret, data: { 'redis-url': b64('redis://:rotated@r:6379') } });
    await routes();
    expect((client.peek(resourceTypes.secret, 'team-a', 'all-redis') as Obj)['data']).toEqual({
      url: b64('redis://:rotated@r:6379'),
    });
    client.put(routeObject('all', { redis: { url: 'redis://team:6379' } }));
    await routes();
    expect(client.peek(resourceTypes.secret, 'team-a', 'all-redis')).toBeUndefined();
  });

  it('a missing source Secret: the children are applied anyway and a Warning Event names it', async () => {
    const { client, events, routes } = await setup();
    client.put(routeObject());
    await routes();
    expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeDefined();
    expect(client.peek(resourceTypes.secret, 'team-a', 'all-redis')).toBeUndefined();
    expect(events.list).toContainEqual(
      expect.objectContaining({
        type: 'Warning',
        reason: 'RedisSecretMissing',
        message: expect.stringMatching(
          /portcullis-system\/portcullis-redis-credentials \(key redis-url\)/,
        ),
      }),
    );
  });

  it('copies the auth Redis key beside the auth server, whose Deployment holds no URL', async () => {
    const { client, auth } = await setup();
    client.put(sourceSecret);
    client.put(clientObject());
    await auth();
    const copy = client.peek(resourceTypes.secret, 'team-a', 'portcullis-auth-redis') as Obj;
    expect(copy['data']).toEqual({
      url: b64(URL.replace('portcullis-redis', 'portcullis-auth-redis')),
    });
    const deployment = client.peek(resourceTypes.deployment, 'team-a', 'portcullis-auth-server');
    expect(deployment).toMatchObject({
      metadata: { name: 'portcullis-auth-server', namespace: 'team-a' },
    });
    expect(JSON.stringify(deployment)).not.toContain(PASSWORD);
    for (const cm of await allOf(client, resourceTypes.configMap))
      expect(JSON.stringify(cm)).not.toContain(PASSWORD);
  });
});
