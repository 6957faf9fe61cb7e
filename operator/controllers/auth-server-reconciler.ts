// The auth server of one namespace (key = the namespace): the client registry assembled from
// every OAuthClient there, the signing keys (generated once, rotated on a timer, old public keys
// kept until their tokens expire), the Deployment and the Service. No OAuthClient left: the
// objects are deleted here explicitly (their owner references would let the garbage collector do
// it too, where one runs). get -> observe -> pure plan (plan-auth-server.ts) -> apply.
import type { Logger } from 'pino';
import { oauthClientSchema } from '../api/index.ts';
import { generateSigningJwks } from '../../lib/config/auth-server.ts';
import {
  AUTH_SERVER_NAME,
  CLIENT_REGISTRY_SECRET,
  SIGNING_KEYS_SECRET,
} from '../resources/auth/names.ts';
import { controllerOf, OAUTH_CLIENT_LABEL } from '../resources/shared/metadata.ts';
import { AUTH_REDIS_SECRET, authRedisSource } from '../resources/shared/redis-url-secret.ts';
import { readSecretKey } from './source-secret.ts';
import {
  namespaceRedisUrlData,
  releaseNamespaceRedisUser,
  type TenantRedisUsers,
} from '../redis/tenant-redis-users.ts';
import type { ResourceSettings } from '../resources/shared/settings.ts';
import {
  planSigningKeys,
  signingKeysSecret,
  signingKeysStateOf,
  type SigningKeysState,
} from '../resources/auth/signing-keys-secret.ts';
import type { Applier } from '../runtime/applier.ts';
import type { Clock } from '../runtime/clock.ts';
import type { EventRecorder } from '../runtime/events.ts';
import { EventReasons, type EventReason } from './conditions.ts';
import type { ReconcileResult, Reconciler } from '../runtime/controller.ts';
import { isConflict } from '../runtime/errors.ts';
import type { Informer } from '../runtime/informer.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { KubeObject } from '../runtime/kube-object.ts';
import { resourceTypes, type ResourceType } from '../runtime/resource-types.ts';
import {
  describeOwner,
  isAuthServerObject,
  planAuthServer,
  type AuthServerObserved,
} from './plan-auth-server.ts';

/** A namespace Redis user that could not be made is tried again this soon (ms). */
const REDIS_USER_RETRY_MS = 10_000;

export interface AuthServerCaches {
  clients: Informer;
  secrets: Informer;
  deployments: Informer;
  services: Informer;
  podDisruptionBudgets: Informer;
  networkPolicies: Informer;
}

export interface AuthServerReconcilerDeps {
  client: KubeClient;
  applier: Applier;
  caches: AuthServerCaches;
  settings: ResourceSettings;
  clock: Clock;
  log: Logger;
  /** Warnings on the OAuthClients of the namespace (e.g. the users Secret is missing). */
  events?: EventRecorder<EventReason>;
  /** The namespaces' own Redis users: the auth server's Redis Secret names its namespace's user (operator/redis/). */
  redisUsers?: TenantRedisUsers;
}

export class AuthServerReconciler implements Reconciler {
  readonly name = 'auth-server';
  readonly #d: AuthServerReconcilerDeps;

  constructor(deps: AuthServerReconcilerDeps) {
    this.#d = deps;
  }

  async reconcile(namespace: string): Promise<ReconcileResult> {
    const { caches } = this.#d;
    const live = caches.clients
      .list(namespace)
      .filter((c) => c.metadata.deletionTimestamp === undefined);
    const clients = live.flatMap((raw) => {
      const parsed = oauthClientSchema.safeParse(raw);
      return parsed.success ? [parsed.data] : [];
    });
    if (clients.length === 0) {
      await this.#prune(namespace);
      return {};
    }
    const conflicts = await this.#foreignObjects(namespace);
    if (conflicts.length > 0) {
      const message = `the auth server in ${namespace} cannot run: ${conflicts.join('; ')}. The operator does not take over objects it did not make for the auth server; delete or rename them`;
      this.#d.log.warn({ namespace, conflicts }, 'auth-server objects taken by others');
      for (const c of live) this.#d.events?.event(c, 'Warning', EventReasons.Conflict, message);
      return { waiting: true };
    }
    const plan = planAuthServer(
      namespace,
      this.#d.settings,
      await this.#observe(namespace, clients),
    );

    await this.#d.applier.apply(plan.registry, caches.secrets);
    const recheckInMs = await this.#ensureSigningKeys(namespace, clients);
    for (const step of plan.steps) {
      if ('object' in step) {
        await this.#d.applier.apply(step.object, caches[step.cache]);
        continue;
      }
      const obj = caches[step.cache].get(namespace, step.stale);
      if (obj === undefined || !isAuthServerObject(obj) || !(await this.#d.applier.remove(obj)))
        continue;
      if (step.why !== undefined)
        this.#d.log.info({ namespace }, `deleted auth-server ${obj.kind}: ${step.why}`);
    }
    for (const w of plan.warnings) {
      this.#d.log.warn({ namespace, ...w.fields }, w.log);
      for (const c of live) this.#d.events?.event(c, 'Warning', w.reason, w.message);
    }
    // A namespace Redis user that could not be made is tried again soon.
    const redisUserFailed = plan.warnings.some((w) => w.reason === EventReasons.RedisUserFailed);
    const next = redisUserFailed
      ? Math.min(recheckInMs ?? REDIS_USER_RETRY_MS, REDIS_USER_RETRY_MS)
      : recheckInMs;
    return next === undefined ? {} : { requeueAfterMs: next };
  }

  /** The reads the plan needs: the clients' Secrets, the namespace's Redis URL, the users Secret. */
  async #observe(
    namespace: string,
    clients: AuthServerObserved['clients'],
  ): Promise<AuthServerObserved> {
    const { client } = this.#d;
    // One live list of the clients' Secrets (the cache holds their metadata only).
    const secrets = await client.list(resourceTypes.secret, {
      namespace,
      labelSelector: OAUTH_CLIENT_LABEL,
      keep: (s) => controllerOf(s, 'OAuthClient') !== undefined,
    });
    const source = authRedisSource(this.#d.settings);
    const adminData = source === undefined ? undefined : await readSecretKey(client, source);
    let redisUserProblem: string | undefined;
    const redisUrlData =
      adminData === undefined
        ? undefined
        : await namespaceRedisUrlData(this.#d.redisUsers, adminData, namespace, 'auth').catch(
            (err: unknown) => {
              redisUserProblem = (err as Error).message;
              return undefined;
            },
          );
    const usersSecret = await client.get(
      resourceTypes.secret,
      namespace,
      this.#d.settings.usersSecretName,
    );
    return { clients, clientSecrets: secrets.items, redisUrlData, redisUserProblem, usersSecret };
  }

  async #ensureSigningKeys(
    namespace: string,
    owners: Parameters<typeof signingKeysSecret>[2],
  ): Promise<number | undefined> {
    const now = this.#d.clock.now();
    const cached = this.#d.caches.secrets.get(namespace, SIGNING_KEYS_SECRET);
    // Read live (the cache holds metadata only): keys must never be regenerated by a stale view.
    const live = await this.#d.client.get(resourceTypes.secret, namespace, SIGNING_KEYS_SECRET);
    const state = signingKeysStateOf(live);
    const plan = planSigningKeys(state, now, this.#d.settings);
    const createdAt: Record<string, number> = {};
    for (const k of plan.keep) createdAt[k.kid] = state?.createdAt[k.kid] ?? now;
    let next: SigningKeysState;
    if (plan.generate || state === undefined) {
      const file = await generateSigningJwks({
        existing: plan.keep.length > 0 ? { keys: plan.keep } : undefined,
      });
      const [fresh] = file.keys;
      if (fresh !== undefined) createdAt[fresh.kid] = now;
      next = { file, createdAt };
      this.#d.log.info(
        { namespace, kid: fresh?.kid, kept: plan.keep.length },
        state === undefined ? 'generated signing key' : 'rotated signing key',
      );
    } else {
      next = { file: { keys: plan.keep }, createdAt };
    }
    const desired = signingKeysSecret(namespace, next, owners);
    if (live === undefined) {
      try {
        await this.#d.applier.create(desired);
      } catch (err) {
        if (isConflict(err))
          throw new Error(`Secret ${SIGNING_KEYS_SECRET} appeared while creating it; retrying`, {
            cause: err,
          });
        throw err;
      }
    } else if (cached === undefined) {
      await this.#d.applier.force(desired);
    } else {
      await this.#d.applier.apply(desired, this.#d.caches.secrets);
    }
    return plan.recheckInMs;
  }

  /**
   * Objects named like the auth server's and not its own (a route's children, a team's objects):
   * applying would take them over, and the other controller would take them back, forever. The
   * caches answer for what a Portcullis object owns; a miss of the Deployment or Service is
   * confirmed live (the caches never see an object nothing of Portcullis owns).
   */
  async #foreignObjects(namespace: string): Promise<string[]> {
    const { caches, client } = this.#d;
    const checks: Array<[KubeObject | undefined, ResourceType | undefined, string]> = [
      [
        caches.deployments.get(namespace, AUTH_SERVER_NAME),
        resourceTypes.deployment,
        AUTH_SERVER_NAME,
      ],
      [caches.services.get(namespace, AUTH_SERVER_NAME), resourceTypes.service, AUTH_SERVER_NAME],
      [caches.podDisruptionBudgets.get(namespace, AUTH_SERVER_NAME), undefined, AUTH_SERVER_NAME],
      [caches.networkPolicies.get(namespace, AUTH_SERVER_NAME), undefined, AUTH_SERVER_NAME],
      [caches.secrets.get(namespace, AUTH_REDIS_SECRET), undefined, AUTH_REDIS_SECRET],
    ];
    const lives = await Promise.all(
      checks.map(([cached, type, name]) =>
        cached !== undefined || type === undefined ? cached : client.get(type, namespace, name),
      ),
    );
    return lives.flatMap((obj) =>
      obj === undefined || isAuthServerObject(obj)
        ? []
        : [`${obj.kind} ${obj.metadata.name} ${describeOwner(obj)}`],
    );
  }

  async #prune(namespace: string): Promise<void> {
    const { caches, client } = this.#d;
    const objects: Array<[KubeObject | undefined, ResourceType]> = [
      [
        caches.podDisruptionBudgets.get(namespace, AUTH_SERVER_NAME),
        resourceTypes.podDisruptionBudget,
      ],
      [caches.networkPolicies.get(namespace, AUTH_SERVER_NAME), resourceTypes.networkPolicy],
      [caches.deployments.get(namespace, AUTH_SERVER_NAME), resourceTypes.deployment],
      [caches.services.get(namespace, AUTH_SERVER_NAME), resourceTypes.service],
      [caches.secrets.get(namespace, CLIENT_REGISTRY_SECRET), resourceTypes.secret],
      [caches.secrets.get(namespace, SIGNING_KEYS_SECRET), resourceTypes.secret],
      [caches.secrets.get(namespace, AUTH_REDIS_SECRET), resourceTypes.secret],
    ];
    for (const [obj, type] of objects) {
      // Never a namesake the auth server did not make (a route's child is the route's to delete).
      if (obj === undefined || !isAuthServerObject(obj)) continue;
      await client.delete(type, namespace, obj.metadata.name, obj.metadata.uid);
      this.#d.log.info(
        { namespace, kind: obj.kind, name: obj.metadata.name },
        'deleted auth-server object: no OAuthClient left',
      );
    }
    // The namespace's Redis user goes with its last OAuthClient.
    const source = authRedisSource(this.#d.settings);
    if (this.#d.redisUsers !== undefined && source !== undefined) {
      const adminData = await readSecretKey(client, source);
      if (adminData !== undefined)
        await releaseNamespaceRedisUser(this.#d.redisUsers, adminData, namespace, 'auth');
    }
  }
}
