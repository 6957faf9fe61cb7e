// The operator's event -> key mappings (app.ts builds the rest): which object each change of a
// cached object makes a controller look at again. Level-based: a mapping only says WHICH object
// to look at again, never what changed.
import {
  AUTH_SERVER_NAME,
  CLIENT_REGISTRY_SECRET,
  SIGNING_KEYS_SECRET,
} from './resources/auth/names.ts';
import { controllerOf } from './resources/shared/metadata.ts';
import { AUTH_REDIS_SECRET } from './resources/shared/redis-url-secret.ts';
import type { Operator } from './app.ts';
import type { InformerHandler } from './runtime/informer.ts';
import { asRecord, keyOf, objectKey, type KubeObject } from './runtime/kube-object.ts';

/** The routes informer's index of spec.targetRef: `namespace/deployment` -> the routes naming it. */
export const TARGET_REF_INDEX = 'targetRef';

export function targetRefKeys(route: KubeObject): string[] {
  const name = asRecord(asRecord(route['spec'])?.['targetRef'])?.['name'];
  return typeof name === 'string' ? [objectKey(route.metadata.namespace, name)] : [];
}

/** Calls fn for every add, update and delete. */
function onAny(fn: (obj: KubeObject) => void): InformerHandler {
  return { onAdd: fn, onUpdate: (_old, obj) => fn(obj), onDelete: fn };
}

/** Adds the handlers that enqueue the keys each change concerns. */
export function mapEventsToKeys(
  informers: Operator['informers'],
  controllers: Operator['controllers'],
): void {
  const { routes, clients, authServers, policies } = controllers;
  informers.routes.addHandler(onAny((o) => routes.enqueue(keyOf(o))));
  // Every policy of the namespace: one that goes (or changes targets) may end another's conflict.
  informers.policies.addHandler(
    onAny((o) => {
      for (const p of informers.policies.list(o.metadata.namespace)) policies.enqueue(keyOf(p));
      policies.enqueue(keyOf(o));
    }),
  );
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
    const policyOwner = controllerOf(o, 'RateLimitPolicy');
    if (policyOwner !== undefined) policies.enqueue(objectKey(ns, policyOwner.name));
    const clientOwner = controllerOf(o, 'OAuthClient');
    if (clientOwner !== undefined) {
      clients.enqueue(objectKey(ns, clientOwner.name));
      if (ns !== undefined) authServers.enqueue(ns);
    }
    if (
      ns !== undefined &&
      (o.metadata.name === AUTH_SERVER_NAME ||
        o.metadata.name === CLIENT_REGISTRY_SECRET ||
        o.metadata.name === SIGNING_KEYS_SECRET ||
        o.metadata.name === AUTH_REDIS_SECRET)
    ) {
      authServers.enqueue(ns);
      // The registry decides each client's Ready condition.
      if (o.metadata.name === CLIENT_REGISTRY_SECRET)
        for (const c of informers.clients.list(ns)) clients.enqueue(keyOf(c));
    }
  });
  informers.targetDeployments.addHandler(
    onAny((d) => {
      for (const r of informers.routes.byIndex(TARGET_REF_INDEX, keyOf(d)))
        routes.enqueue(keyOf(r));
    }),
  );
  for (const i of [
    informers.deployments,
    informers.services,
    informers.configMaps,
    informers.secrets,
    informers.networkPolicies,
    informers.podDisruptionBudgets,
  ])
    i.addHandler(byOwner);
}
