// The desired auth server of one namespace as a pure function of its OAuthClients, the settings
// and what the reconciler read before (the clients' Secrets, the namespace's Redis URL, the users
// Secret): no I/O, so every branch is tested without an API server. The signing keys are not in
// the plan: they are generated (random) and written under their own rules (signing-keys-secret.ts).
import type { OAuthClient } from '../api/index.ts';
import {
  authServerDeployment,
  authServerNetworkPolicy,
  authServerPodDisruptionBudget,
  authServerService,
} from '../resources/auth/deployment.ts';
import {
  clientRegistrySecret,
  type RegisteredOAuthClient,
} from '../resources/auth/client-registry-secret.ts';
import { AUTH_SERVER_NAME, oauthClientSecretName } from '../resources/auth/names.ts';
import { credentialsOf } from '../resources/auth/oauth-client-secret.ts';
import { controllerOf } from '../resources/shared/metadata.ts';
import {
  AUTH_REDIS_SECRET,
  authRedisSecret,
  authRedisSource,
} from '../resources/shared/redis-url-secret.ts';
import type { ResourceSettings } from '../resources/shared/settings.ts';
import type { KubeObject } from '../runtime/kube-object.ts';
import { EventReasons, type EventReason } from './conditions.ts';

/** The reconciler's cache that holds an object of this kind. */
export type AuthServerCache =
  'secrets' | 'deployments' | 'services' | 'podDisruptionBudgets' | 'networkPolicies';

/** What the reconciler read before planning. */
export interface AuthServerObserved {
  /** The namespace's OAuthClients that parse and are not being deleted (at least one). */
  clients: readonly OAuthClient[];
  /** The clients' Secrets, read live (the cache holds their metadata only). */
  clientSecrets: readonly KubeObject[];
  /** The auth Redis's URL as the namespace's own user; undefined: none to write now. */
  redisUrlData?: string | undefined;
  /** Why the namespace's Redis user could not be made (Redis unreachable): its Secret is left as it is. */
  redisUserProblem?: string | undefined;
  /** The users Secret the auth server mounts (the operator's setting, not its child); undefined: missing. */
  usersSecret: KubeObject | undefined;
}

export interface AuthServerPlan {
  /** The client registry, applied first; the signing keys go right after it. */
  registry: KubeObject;
  /**
   * Then in this order (the Secrets before the Deployment that mounts them): objects to apply, and
   * objects no longer wanted, by name, deleted when they are the auth server's own (`why` for the log).
   */
  steps: Array<
    | { object: KubeObject; cache: AuthServerCache }
    | { stale: string; cache: AuthServerCache; why?: string }
  >;
  /** Warnings on every OAuthClient of the namespace, and the log line and fields that go with them. */
  warnings: Array<{
    reason: EventReason;
    message: string;
    log: string;
    fields: Record<string, unknown>;
  }>;
}

/** The client registry's entries: a client whose Secret this very OAuthClient owns (not one left over by a deleted namesake) and holds credentials. */
export function registeredClients(
  clients: readonly OAuthClient[],
  clientSecrets: readonly KubeObject[],
): RegisteredOAuthClient[] {
  const byName = new Map(clientSecrets.map((s) => [s.metadata.name, s]));
  return clients.flatMap((client) => {
    const secret = byName.get(oauthClientSecretName(client.metadata.name));
    const credentials = credentialsOf(secret);
    return secret !== undefined &&
      credentials !== undefined &&
      controllerOf(secret, 'OAuthClient')?.uid === client.metadata.uid
      ? [{ client, credentials }]
      : [];
  });
}

export function planAuthServer(
  namespace: string,
  settings: ResourceSettings,
  observed: AuthServerObserved,
): AuthServerPlan {
  const owners = observed.clients;
  const steps: AuthServerPlan['steps'] = [];
  const warnings: AuthServerPlan['warnings'] = [];
  // The auth Redis Secret (in the operator's namespace), copied beside the auth server whose
  // REDIS_URL references it; a stale copy (the setting changed) is deleted.
  const source = authRedisSource(settings);
  if (source === undefined) steps.push({ stale: AUTH_REDIS_SECRET, cache: 'secrets' });
  else if (observed.redisUrlData !== undefined)
    steps.push({
      object: authRedisSecret(namespace, owners, observed.redisUrlData),
      cache: 'secrets',
    });
  else if (observed.redisUserProblem !== undefined) {
    // Redis unreachable: everything else is applied, the Secret left as it is.
    const problem = observed.redisUserProblem;
    warnings.push({
      reason: EventReasons.RedisUserFailed,
      message: `could not make the namespace's Redis user with the operator's auth Redis (${problem}); retrying`,
      log: 'could not make the namespace Redis user',
      fields: { err: problem },
    });
  } else {
    const message = `the auth server in ${namespace} cannot start: the operator's auth Redis Secret ${source.namespace}/${source.name} (key ${source.key}) is missing or empty (the chart's auth.redis.existingSecret)`;
    warnings.push({
      reason: EventReasons.RedisSecretMissing,
      message,
      log: 'auth Redis Secret missing',
      fields: { secret: `${source.namespace}/${source.name}` },
    });
  }
  steps.push(
    { object: authServerDeployment(namespace, settings, owners), cache: 'deployments' },
    { object: authServerService(namespace, settings, owners), cache: 'services' },
  );
  // A budget while the auth server runs more than one replica; the one left from more replicas goes.
  const budget = authServerPodDisruptionBudget(namespace, settings, owners);
  if (budget !== undefined) steps.push({ object: budget, cache: 'podDisruptionBudgets' });
  else steps.push({ stale: AUTH_SERVER_NAME, cache: 'podDisruptionBudgets', why: 'one replica' });
  // The pods' NetworkPolicy, unless the operator's NetworkPolicies are turned off (then the one it made goes).
  if (settings.routeNetworkPolicy)
    steps.push({
      object: authServerNetworkPolicy(namespace, settings, owners),
      cache: 'networkPolicies',
    });
  else
    steps.push({
      stale: AUTH_SERVER_NAME,
      cache: 'networkPolicies',
      why: 'NetworkPolicies are turned off',
    });
  // The users Secret is the operator's setting, not its child: tell a person when it is missing.
  const { usersSecretName, usersSecretKey } = settings;
  const data = observed.usersSecret?.['data'];
  if (!(typeof data === 'object' && data !== null && usersSecretKey in data)) {
    const what =
      observed.usersSecret === undefined ? 'does not exist' : `has no key ${usersSecretKey}`;
    const message = `the auth server in ${namespace} cannot start: Secret ${usersSecretName} ${what}; create it with the users file (kubectl -n ${namespace} create secret generic ${usersSecretName} --from-file=${usersSecretKey}=users.json; password hashes from node services/auth-server/hash-password.ts)`;
    warnings.push({
      reason: EventReasons.UsersSecretMissing,
      message,
      log: 'users Secret missing',
      fields: { secret: usersSecretName },
    });
  }
  return {
    registry: clientRegistrySecret(
      namespace,
      registeredClients(observed.clients, observed.clientSecrets),
      owners,
    ),
    steps,
    warnings,
  };
}

/** Made by the auth-server controller: owned by OAuthClients, controlled by nothing (a route's child has its route as controller). */
export function isAuthServerObject(obj: KubeObject): boolean {
  const refs = obj.metadata.ownerReferences ?? [];
  return refs.every((r) => r.controller !== true) && refs.some((r) => r.kind === 'OAuthClient');
}

/** Why an object named like one of the auth server's is not its own. */
export function describeOwner(obj: KubeObject): string {
  const controller = obj.metadata.ownerReferences?.find((r) => r.controller === true);
  return controller === undefined
    ? "exists and is not the auth server's"
    : `is controlled by ${controller.kind} ${controller.name}`;
}
