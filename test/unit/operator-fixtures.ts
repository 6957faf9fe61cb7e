// Shared fixtures of the operator unit tests (not a test file itself).
import { oauthClientSchema, rateLimitRouteSchema, type OAuthClient, type RateLimitRoute } from '../../operator/api/index.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { defaultResourceSettings, type ResourceSettings } from '../../operator/resources/settings.ts';

export const settings: ResourceSettings = { ...defaultResourceSettings, sidecarImage: 'portcullis/sidecar:test', authServerImage: 'portcullis/auth-server:test', defaultRedisUrl: 'redis://redis:6379', authRedisUrl: 'redis://auth-redis:6379', authServerReplicas: 2 };

/** The specification's end-to-end limits: 1 token/s, burst 10, 2 per request. */
export function routeObject(name = 'all', overrides: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name, namespace: 'team-a', uid: `uid-${name}`, generation: 1 },
    spec: {
      target: { image: 'portcullis/user-service:test', command: ['node', 'services/user-service/main.ts'], port: 8081, readinessPath: '/healthcheck/ready', replicas: 2, env: [{ name: 'PORT', value: '8081' }] },
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
    spec: { displayName: 'Demo App', redirectUris: ['https://app.example.com/callback'], scopes: ['profile', 'email'] },
  };
}

export function oauthClient(name = 'demo-app'): OAuthClient {
  return oauthClientSchema.parse(clientObject(name));
}

import { pino } from 'pino';
import { Informer } from '../../operator/runtime/informer.ts';
import type { MemoryKubeClient } from '../../operator/runtime/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import type { Clock } from '../../operator/runtime/clock.ts';
import type { EventRecorder } from '../../operator/runtime/events.ts';

export const silent = pino({ level: 'silent' });

/** Started, synced informers of every kind the reconcilers read. */
export async function startCaches(client: MemoryKubeClient, clock: Clock) {
  const make = (type: (typeof resourceTypes)[keyof typeof resourceTypes]) =>
    new Informer(client, clock, silent, { type, relistIntervalMs: 3600_000, backoff: { baseMs: 10, maxMs: 100 } });
  const caches = {
    routes: make(resourceTypes.rateLimitRoute),
    clients: make(resourceTypes.oauthClient),
    deployments: make(resourceTypes.deployment),
    services: make(resourceTypes.service),
    configMaps: make(resourceTypes.configMap),
    secrets: make(resourceTypes.secret),
    networkPolicies: make(resourceTypes.networkPolicy),
    podDisruptionBudgets: make(resourceTypes.podDisruptionBudget),
  };
  const all = Object.values(caches);
  for (const i of all) i.start();
  await Promise.all(all.map((i) => i.waitForSync()));
  return { ...caches, stop: () => Promise.all(all.map((i) => i.stop())) };
}

export interface RecordedEvent {
  name: string;
  type: string;
  reason: string;
  message: string;
}

export function recordingEvents(): EventRecorder & { list: RecordedEvent[] } {
  const list: RecordedEvent[] = [];
  return { list, event: (obj, type, reason, message) => list.push({ name: obj.metadata.name, type, reason, message }) };
}
