// Composition of the operator from injected parts (buildOperator never reads env or listens):
// shared informers, the four controllers, the event -> key mappings (event-mappings.ts), the
// manager.
import type { Logger } from 'pino';
import type { TenantRedisUsers } from './redis/tenant-redis-users.ts';
import { AuthServerReconciler } from './controllers/auth-server-reconciler.ts';
import { OAuthClientReconciler } from './controllers/oauth-client-reconciler.ts';
import { RateLimitRouteReconciler } from './controllers/rate-limit-route-reconciler.ts';
import { RateLimitPolicyReconciler } from './controllers/rate-limit-policy-reconciler.ts';
import type { OperatorConfig } from './config.ts';
import { leaseNamespace, resourceSettings } from './config-settings.ts';
import { mapEventsToKeys, TARGET_REF_INDEX, targetRefKeys } from './event-mappings.ts';
import { AUTH_SERVER_NAME } from './resources/auth/names.ts';
import { MANAGED_SELECTOR, ownedByPortcullis } from './resources/shared/metadata.ts';
import { Applier } from './runtime/applier.ts';
import type { Clock } from './runtime/clock.ts';
import { Controller } from './runtime/controller.ts';
import { createEventRecorder } from './runtime/events.ts';
import { Informer } from './runtime/informer.ts';
import type { KubeClient } from './runtime/kube-client.ts';
import { keyOf, type KubeObject } from './runtime/kube-object.ts';
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
  informers: Record<
    | 'routes'
    | 'clients'
    | 'policies'
    | 'deployments'
    | 'targetDeployments'
    | 'services'
    | 'configMaps'
    | 'secrets'
    | 'networkPolicies'
    | 'podDisruptionBudgets',
    Informer
  >;
  controllers: Record<'routes' | 'clients' | 'authServers' | 'policies', Controller>;
}

/** The field manager of each controller's writes (server-side apply, create). */
export const FIELD_MANAGERS = {
  route: 'portcullis-route',
  oauthClient: 'portcullis-oauth-client',
  authServer: 'portcullis-auth-server',
  policy: 'portcullis-policy',
} as const;
/** The one field manager every controller wrote as before: its applied fields are handed over (runtime/applier.ts). */
export const FORMER_FIELD_MANAGER = 'portcullis-operator';

export function buildOperator(deps: OperatorDeps): Operator {
  const { client, clock, log, metrics, config } = deps;
  const settings = resourceSettings(config);
  const namespaces = config.PORTCULLIS_WATCH_NAMESPACES;
  // Children: the label narrows what the API server sends, the owner reference decides what is
  // kept (anyone can set the label); Secrets and ConfigMaps are cached as metadata only.
  const informer = (
    type: ResourceType,
    child?: { metadataOnly: boolean },
    targets?: { keep: (obj: KubeObject) => boolean },
  ) =>
    new Informer(client, clock, log, {
      type,
      namespaces,
      ...(child === undefined
        ? {}
        : {
            labelSelector: MANAGED_SELECTOR,
            keep: ownedByPortcullis,
            metadataOnly: child.metadataOnly,
          }),
      ...(targets === undefined ? {} : { metadataOnly: true, keep: targets.keep }),
      relistIntervalMs: config.PORTCULLIS_RELIST_INTERVAL_MS,
      backoff: { baseMs: 500, maxMs: 30_000, jitter: 0.2 },
      onRestart: (reason) => metrics.informerRestarts.inc({ resource: type.plural, reason }),
    });
  const routeInformer = informer(resourceTypes.rateLimitRoute);
  routeInformer.addIndex(TARGET_REF_INDEX, targetRefKeys);
  const informers = {
    routes: routeInformer,
    clients: informer(resourceTypes.oauthClient),
    policies: informer(resourceTypes.rateLimitPolicy),
    // Children only: everything the operator creates carries the managed-by label and an owner.
    deployments: informer(resourceTypes.deployment, { metadataOnly: false }),
    // The teams' Deployments that spec.targetRef names (they carry no operator label): every
    // Deployment's metadata goes by, only those some route targets stay in the cache, and the
    // reconciler GETs the one it works on. Their changes (created, rolled out, the sidecar edited
    // away) wake the routes at once instead of a poll.
    targetDeployments: informer(resourceTypes.deployment, undefined, {
      keep: (d) => routeInformer.byIndex(TARGET_REF_INDEX, keyOf(d)).length > 0,
    }),
    services: informer(resourceTypes.service, { metadataOnly: false }),
    configMaps: informer(resourceTypes.configMap, { metadataOnly: true }),
    secrets: informer(resourceTypes.secret, { metadataOnly: true }),
    networkPolicies: informer(resourceTypes.networkPolicy, { metadataOnly: false }),
    podDisruptionBudgets: informer(resourceTypes.podDisruptionBudget, { metadataOnly: false }),
  };

  // One field manager per controller, each taking over what the operator's former single manager applied.
  const managed = (fieldManager: string) => {
    const own = client.withFieldManager(fieldManager);
    return {
      client: own,
      applier: new Applier(own, metrics, { formerManagers: [FORMER_FIELD_MANAGER] }),
    };
  };
  const route = managed(FIELD_MANAGERS.route);
  const oauthClient = managed(FIELD_MANAGERS.oauthClient);
  const authServer = managed(FIELD_MANAGERS.authServer);
  const policy = managed(FIELD_MANAGERS.policy);
  const events = createEventRecorder(client, clock, log, 'portcullis-operator');
  const controllerOptions = {
    workers: config.PORTCULLIS_WORKERS,
    backoff: { baseMs: 200, maxMs: 5 * 60_000, jitter: 0.1 },
    resyncIntervalMs: config.PORTCULLIS_RESYNC_INTERVAL_MS,
  };
  const routes = new Controller(
    {
      ...controllerOptions,
      reconciler: new RateLimitRouteReconciler({
        applier: route.applier,
        caches: informers,
        settings,
        clock,
        events,
        client: route.client,
        redisUsers: deps.redisUsers,
        log: log.child({ controller: 'ratelimitroute' }),
      }),
      keys: () => informers.routes.list().map(keyOf),
    },
    clock,
    log,
    metrics,
  );
  const clients = new Controller(
    {
      ...controllerOptions,
      reconciler: new OAuthClientReconciler({
        client: oauthClient.client,
        applier: oauthClient.applier,
        caches: informers,
        clock,
        events,
        log: log.child({ controller: 'oauthclient' }),
      }),
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
      reconciler: new AuthServerReconciler({
        client: authServer.client,
        applier: authServer.applier,
        caches: informers,
        settings,
        clock,
        events,
        redisUsers: deps.redisUsers,
        log: log.child({ controller: 'auth-server' }),
      }),
      keys: () => {
        const ns = new Set<string>();
        for (const c of informers.clients.list())
          if (c.metadata.namespace !== undefined) ns.add(c.metadata.namespace);
        for (const d of informers.deployments.list())
          if (d.metadata.name === AUTH_SERVER_NAME && d.metadata.namespace !== undefined)
            ns.add(d.metadata.namespace);
        return [...ns];
      },
    },
    clock,
    log,
    metrics,
  );

  const policies = new Controller(
    {
      ...controllerOptions,
      reconciler: new RateLimitPolicyReconciler({
        applier: policy.applier,
        caches: informers,
        settings,
        clock,
        events,
        client: policy.client,
        redisUsers: deps.redisUsers,
        log: log.child({ controller: 'ratelimitpolicy' }),
      }),
      keys: () => informers.policies.list().map(keyOf),
    },
    clock,
    log,
    metrics,
  );

  mapEventsToKeys(informers, { routes, clients, authServers, policies });
  // The applier remembers the versions it wrote of metadata-only children until they are gone.
  for (const i of [informers.configMaps, informers.secrets])
    i.addHandler({
      onDelete: (o) => [route, oauthClient, authServer, policy].forEach((c) => c.applier.forget(o)),
    });

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
    controllers: [routes, clients, authServers, policies],
    elector,
    metrics,
    log,
    onLeadershipLost: deps.onLeadershipLost,
  });
  return { manager, informers, controllers: { routes, clients, authServers, policies } };
}
