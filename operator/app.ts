// Composition of the operator from injected parts (buildOperator never reads env or listens):
// shared informers, the three controllers, the event -> key mappings, the manager.
import type { Logger } from 'pino';
import type { TenantRedisUsers } from './redis/tenant-redis-users.ts';
import { AuthServerReconciler } from './controllers/auth-server-reconciler.ts';
import { OAuthClientReconciler } from './controllers/oauth-client-reconciler.ts';
import { RateLimitRouteReconciler } from './controllers/rate-limit-route-reconciler.ts';
import type { OperatorConfig } from './config.ts';
import { leaseNamespace, resourceSettings } from './config.ts';
import { AUTH_SERVER_NAME, CLIENT_REGISTRY_SECRET, SIGNING_KEYS_SECRET } from './resources/auth/names.ts';
import { controllerOf, MANAGED_SELECTOR, ownedByPortcullis } from './resources/shared/metadata.ts';
import { AUTH_REDIS_SECRET } from './resources/shared/redis-url-secret.ts';
import { Applier } from './runtime/applier.ts';
import type { Clock } from './runtime/clock.ts';
import { Controller } from './runtime/controller.ts';
import { createEventRecorder } from './runtime/events.ts';
import { Informer, type InformerHandler } from './runtime/informer.ts';
import type { KubeClient } from './runtime/kube-client.ts';
import { keyOf, objectKey, type KubeObject } from './runtime/kube-object.ts';
import { LeaderElector } from './runtime/leader-election.ts';
import { Manager } from './runtime/manager.ts';
import type { OperatorMetrics } from './runtime/metrics.ts';
import { resourceTypes, type ResourceType } from './runtime/resource-types.ts';

export interface OperatorDeps {
  client: KubeClient;
  /**
   * The leader lease's client; unset: `client`. main.ts passes one outside the request rate, so a
   * renewal never waits behind a flood of reconciles (and the lease is never lost to it).
   */
  leaseClient?: KubeClient;
  clock: Clock;
  log: Logger;
  metrics: OperatorMetrics;
  config: OperatorConfig;
  /** Leader-election identity. */
  identity: string;
  onLeadershipLost?: () => void;
  /** The namespaces' own Redis users (operator/redis/); unset: Redis URLs are copied as they are. */
  redisUsers?: TenantRedisUsers;
}

export interface Operator {
  manager: Manager;
  informers: Record<'routes' | 'clients' | 'deployments' | 'services' | 'configMaps' | 'secrets' | 'networkPolicies' | 'podDisruptionBudgets', Informer>;
  controllers: Record<'routes' | 'clients' | 'authServers', Controller>;
}

/** Calls fn for every add, update and delete. */
function onAny(fn: (obj: KubeObject) => void): InformerHandler {
  return { onAdd: fn, onUpdate: (_old, obj) => fn(obj), onDelete: fn };
}

export function buildOperator(deps: OperatorDeps): Operator {
  const { client, clock, log, metrics, config } = deps;
  const settings = resourceSettings(config);
  const namespaces = config.PORTCULLIS_WATCH_NAMESPACES;
  // Children: the label narrows what the API server sends, the owner reference decides what is
  // kept (anyone can set the label); Secrets and ConfigMaps are cached as metadata only.
  const informer = (type: ResourceType, child?: { metadataOnly: boolean }) =>
    new Informer(client, clock, log, {
      type,
      namespaces,
      ...(child === undefined ? {} : { labelSelector: MANAGED_SELECTOR, keep: ownedByPortcullis, metadataOnly: child.metadataOnly }),
      relistIntervalMs: config.PORTCULLIS_RELIST_INTERVAL_MS,
      backoff: { baseMs: 500, maxMs: 30_000, jitter: 0.2 },
      onRestart: (reason) => metrics.informerRestarts.inc({ resource: type.plural, reason }),
    });
  const informers = {
    routes: informer(resourceTypes.rateLimitRoute),
    clients: informer(resourceTypes.oauthClient),
    // Children only: everything the operator creates carries the managed-by label and an owner.
    deployments: informer(resourceTypes.deployment, { metadataOnly: false }),
    services: informer(resourceTypes.service, { metadataOnly: false }),
    configMaps: informer(resourceTypes.configMap, { metadataOnly: true }),
    secrets: informer(resourceTypes.secret, { metadataOnly: true }),
    networkPolicies: informer(resourceTypes.networkPolicy, { metadataOnly: false }),
    podDisruptionBudgets: informer(resourceTypes.podDisruptionBudget, { metadataOnly: false }),
  };

  const applier = new Applier(client, metrics);
  const events = createEventRecorder(client, clock, log, 'portcullis-operator');
  const controllerOptions = {
    workers: config.PORTCULLIS_WORKERS,
    backoff: { baseMs: 200, maxMs: 5 * 60_000, jitter: 0.1 },
    resyncIntervalMs: config.PORTCULLIS_RESYNC_INTERVAL_MS,
  };
  const routes = new Controller(
    {
      ...controllerOptions,
      reconciler: new RateLimitRouteReconciler({ applier, caches: informers, settings, clock, events, client, redisUsers: deps.redisUsers, log: log.child({ controller: 'ratelimitroute' }) }),
      keys: () => informers.routes.list().map(keyOf),
    },
    clock,
    log,
    metrics,
  );
  const clients = new Controller(
    {
      ...controllerOptions,
      reconciler: new OAuthClientReconciler({ client, applier, caches: informers, clock, events, log: log.child({ controller: 'oauthclient' }) }),
      keys: () => informers.clients.list().map(keyOf),
    },
    clock,
    log,
    metrics,
  );
  const authServers = new Controller(
    {
      ...controllerOptions,
      workers: Math.min(2, config.PORTCULLIS_WORKERS),
      reconciler: new AuthServerReconciler({ client, applier, caches: informers, settings, clock, events, redisUsers: deps.redisUsers, log: log.child({ controller: 'auth-server' }) }),
      keys: () => {
        const ns = new Set<string>();
        for (const c of informers.clients.list()) if (c.metadata.namespace !== undefined) ns.add(c.metadata.namespace);
        for (const d of informers.deployments.list()) if (d.metadata.name === AUTH_SERVER_NAME && d.metadata.namespace !== undefined) ns.add(d.metadata.namespace);
        return [...ns];
      },
    },
    clock,
    log,
    metrics,
  );

  // Event -> key mappings (level-based: a mapping only says WHICH object to look at again).
  informers.routes.addHandler(onAny((o) => routes.enqueue(keyOf(o))));
  informers.clients.addHandler(
    onAny((o) => {
      clients.enqueue(keyOf(o));
      if (o.metadata.namespace !== undefined) authServers.enqueue(o.metadata.namespace);
    }),
  );
  const byOwner = onAny((o) => {
    const ns = o.metadata.namespace;
    const routeOwner = controllerOf(o, 'RateLimitRoute');
    if (routeOwner !== undefined) routes.enqueue(objectKey(ns, routeOwner.name));
    const clientOwner = controllerOf(o, 'OAuthClient');
    if (clientOwner !== undefined) {
      clients.enqueue(objectKey(ns, clientOwner.name));
      if (ns !== undefined) authServers.enqueue(ns);
    }
    if (ns !== undefined && (o.metadata.name === AUTH_SERVER_NAME || o.metadata.name === CLIENT_REGISTRY_SECRET || o.metadata.name === SIGNING_KEYS_SECRET || o.metadata.name === AUTH_REDIS_SECRET)) {
      authServers.enqueue(ns);
      // The registry decides each client's Ready condition.
      if (o.metadata.name === CLIENT_REGISTRY_SECRET) for (const c of informers.clients.list(ns)) clients.enqueue(keyOf(c));
    }
  });
  for (const i of [informers.deployments, informers.services, informers.configMaps, informers.secrets, informers.networkPolicies, informers.podDisruptionBudgets]) i.addHandler(byOwner);
  // The applier remembers the versions it wrote of metadata-only children until they are gone.
  for (const i of [informers.configMaps, informers.secrets]) i.addHandler({ onDelete: (o) => applier.forget(o) });

  const elector = config.PORTCULLIS_LEADER_ELECTION
    ? new LeaderElector(deps.leaseClient ?? client, clock, log, {
        namespace: leaseNamespace(config),
        name: config.PORTCULLIS_LEASE_NAME,
        identity: deps.identity,
        leaseDurationMs: config.PORTCULLIS_LEASE_DURATION_MS,
        renewDeadlineMs: config.PORTCULLIS_RENEW_DEADLINE_MS,
        retryPeriodMs: config.PORTCULLIS_RETRY_PERIOD_MS,
      })
    : undefined;

  const manager = new Manager({
    informers: Object.values(informers),
    controllers: [routes, clients, authServers],
    elector,
    metrics,
    log,
    onLeadershipLost: deps.onLeadershipLost,
  });
  return { manager, informers, controllers: { routes, clients, authServers } };
}
