// Shared fixtures of the operator unit tests (not a test file itself).
import {
  oauthClientSchema,
  rateLimitRouteSchema,
  type OAuthClient,
  type RateLimitRoute,
} from '../../operator/api/index.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import {
  defaultResourceSettings,
  type ResourceSettings,
} from '../../operator/resources/shared/settings.ts';
import { pino } from 'pino';
import { ownedByPortcullis } from '../../operator/resources/shared/metadata.ts';
import { Informer } from '../../operator/runtime/informer.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import type { Clock } from '../../operator/runtime/clock.ts';
import type { EventRecorder } from '../../operator/runtime/events.ts';
import { onTestFinished } from 'vitest';
import { RateLimitRouteReconciler } from '../../operator/controllers/rate-limit-route-reconciler.ts';
import { Applier } from '../../operator/runtime/applier.ts';
import { ManualClock, flush } from '../harness/manual-clock.ts';

export const settings: ResourceSettings = {
  ...defaultResourceSettings,
  sidecarImage: 'portcullis/sidecar:test',
  authServerImage: 'portcullis/auth-server:test',
  defaultRedisUrl: 'redis://redis:6379',
  authRedisUrl: 'redis://auth-redis:6379',
  authServerReplicas: 2,
};

/** The specification's end-to-end limits: 1 token/s, burst 10, 2 per request. */
export function routeObject(name = 'all', overrides: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name, namespace: 'team-a', uid: `uid-${name}`, generation: 1 },
    spec: {
      target: {
        image: 'portcullis/user-service:test',
        command: ['node', 'services/user-service/main.ts'],
        port: 8081,
        readinessPath: '/healthcheck/ready',
        replicas: 2,
        env: [{ name: 'PORT', value: '8081' }],
      },
      path: '/**',
      limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 },
      ...overrides,
    },
  };
}

export function route(name = 'all', overrides: Record<string, unknown> = {}): RateLimitRoute {
  return rateLimitRouteSchema.parse(routeObject(name, overrides));
}

export function clientObject(name = 'demo-app', namespace = 'team-a'): KubeObject {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'OAuthClient',
    metadata: { name, namespace, uid: `uid-${name}`, generation: 1 },
    spec: {
      displayName: 'Demo App',
      redirectUris: ['https://app.example.com/callback'],
      scopes: ['profile', 'email'],
    },
  };
}

export function oauthClient(name = 'demo-app'): OAuthClient {
  return oauthClientSchema.parse(clientObject(name));
}

export const silent = pino({ level: 'silent' });

/** An informer of `type` as the tests' caches run it (no periodic relist, fast backoff), not started. */
export function testInformer(
  client: MemoryKubeClient,
  clock: Clock,
  type: (typeof resourceTypes)[keyof typeof resourceTypes],
  child?: { metadataOnly: boolean },
): Informer {
  // Children cached as the operator caches them (app.ts): owned objects only, Secrets and ConfigMaps as metadata.
  const filter =
    child === undefined ? {} : { keep: ownedByPortcullis, metadataOnly: child.metadataOnly };
  return new Informer(client, clock, silent, {
    type,
    relistIntervalMs: 3600_000,
    backoff: { baseMs: 10, maxMs: 100 },
    ...filter,
  });
}

/** Started, synced informers of every kind the reconcilers read. */
export async function startCaches(client: MemoryKubeClient, clock: Clock) {
  const make = (
    type: (typeof resourceTypes)[keyof typeof resourceTypes],
    child?: { metadataOnly: boolean },
  ) => testInformer(client, clock, type, child);
  const caches = {
    routes: make(resourceTypes.rateLimitRoute),
    clients: make(resourceTypes.oauthClient),
    policies: make(resourceTypes.rateLimitPolicy),
    deployments: make(resourceTypes.deployment, { metadataOnly: false }),
    services: make(resourceTypes.service, { metadataOnly: false }),
    configMaps: make(resourceTypes.configMap, { metadataOnly: true }),
    secrets: make(resourceTypes.secret, { metadataOnly: true }),
    networkPolicies: make(resourceTypes.networkPolicy, { metadataOnly: false }),
    podDisruptionBudgets: make(resourceTypes.podDisruptionBudget, { metadataOnly: false }),
  };
  const all = Object.values(caches);
  for (const i of all) i.start();
  await Promise.all(all.map((i) => i.waitForSync()));
  return {
    ...caches,
    stop: async (): Promise<void> => {
      await Promise.all(all.map((i) => i.stop()));
    },
  };
}

export interface RecordedEvent {
  name: string;
  type: string;
  reason: string;
  message: string;
}

export function recordingEvents(): EventRecorder & { list: RecordedEvent[] } {
  const list: RecordedEvent[] = [];
  return {
    list,
    event: (obj, type, reason, message) =>
      list.push({ name: obj.metadata.name, type, reason, message }),
  };
}

/**
 * A RateLimitRoute reconciler on an in-memory API server (`client`, which may hold objects
 * already), with synced caches stopped when the test ends, a ManualClock and recorded events.
 * `reconcile()` reconciles team-a/all (or `key`) with the caches settled before and after.
 * `caches` replaces some of the started caches (a test of what a cache cannot see).
 */
export async function routeReconciler(
  options: {
    client?: MemoryKubeClient;
    settings?: ResourceSettings;
    caches?: (on: { client: MemoryKubeClient; clock: Clock }) => Partial<Caches>;
  } = {},
) {
  const client = options.client ?? new MemoryKubeClient();
  const clock = new ManualClock();
  const caches = await startCaches(client, clock);
  onTestFinished(caches.stop);
  const events = recordingEvents();
  const reconciler = new RateLimitRouteReconciler({
    applier: new Applier(client),
    caches: { ...caches, ...options.caches?.({ client, clock }) },
    settings: options.settings ?? settings,
    clock,
    events,
    client,
    log: silent,
  });
  const reconcile = async (key = 'team-a/all') => {
    await flush();
    const result = await reconciler.reconcile(key);
    await flush();
    return result;
  };
  return { client, clock, caches, events, reconciler, reconcile };
}

type Caches = Awaited<ReturnType<typeof startCaches>>;
