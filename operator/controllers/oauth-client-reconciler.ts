// OAuthClient reconciler: its Secret (client_id, client_secret) generated ONCE — created with a
// POST that fails if the Secret exists, after a live read when the cache has none, so neither a
// stale cache nor an operator restart can ever replace a secret a client already uses — and the
// status (clientId, secretName, Ready once the auth server's registry lists the client).
import type { Logger } from 'pino';
import { oauthClientSchema, type OAuthClient } from '../api/index.ts';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import { CLIENT_REGISTRY_SECRET, oauthClientSecretName } from '../resources/auth/names.ts';
import { registeredClientIds } from '../resources/auth/client-registry-secret.ts';
import { controllerOf } from '../resources/shared/metadata.ts';
import {
  credentialsOf,
  generateCredentials,
  oauthClientSecret,
  ROTATE_SECRET_ANNOTATION,
  ROTATED_FOR_ANNOTATION,
  type ClientCredentials,
} from '../resources/auth/oauth-client-secret.ts';
import type { Applier } from '../runtime/applier.ts';
import type { Clock } from '../runtime/clock.ts';
import type { ReconcileResult, Reconciler } from '../runtime/controller.ts';
import { isConflict } from '../runtime/errors.ts';
import type { EventRecorder } from '../runtime/events.ts';
import type { Informer } from '../runtime/informer.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import { splitKey, type KubeObject } from '../runtime/kube-object.ts';
import { resourceTypes } from '../runtime/resource-types.ts';
import { EventReasons, Reasons, readyStatus, type EventReason, type ReadyState } from './conditions.ts';
import { describeIssues } from './spec-issues.ts';

export interface OAuthClientReconcilerDeps {
  client: KubeClient;
  applier: Applier;
  caches: { clients: Informer; secrets: Informer };
  clock: Clock;
  events: EventRecorder<EventReason>;
  log: Logger;
}

export class OAuthClientReconciler implements Reconciler {
  readonly name = 'oauthclient';
  readonly #d: OAuthClientReconcilerDeps;
  /** Parsed registries by namespace, with the resourceVersion they were parsed from. */
  readonly #registries = new Map<string, { resourceVersion: string; ids: Map<string, string> }>();

  constructor(deps: OAuthClientReconcilerDeps) {
    this.#d = deps;
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const raw = this.#d.caches.clients.get(namespace, name);
    if (raw === undefined || raw.metadata.deletionTimestamp !== undefined) return {};
    const parsed = oauthClientSchema.safeParse(raw);
    if (!parsed.success) {
      const message = `spec is invalid: ${describeIssues(parsed.error)}; fix the OAuthClient`;
      this.#d.events.event(raw, 'Warning', EventReasons.InvalidSpec, message);
      await this.#writeStatus(raw, undefined, { status: 'False', reason: Reasons.InvalidSpec, message });
      return {};
    }
    const client = parsed.data;
    const secretName = oauthClientSecretName(name);
    // The cache holds Secrets' metadata only: the credentials are read live.
    const secret = await this.#d.client.get(resourceTypes.secret, namespace, secretName);

    const owner = secret === undefined ? undefined : controllerOf(secret, 'OAuthClient');
    if (secret !== undefined && (owner === undefined || owner.name !== name)) {
      const message = `Secret ${secretName} exists and is not owned by this OAuthClient; delete or rename it so the operator can generate the client's credentials`;
      this.#d.events.event(raw, 'Warning', EventReasons.SecretConflict, message);
      await this.#writeStatus(raw, secretName, { status: 'False', reason: Reasons.SecretConflict, message });
      return {};
    }

    const credentials = await this.#ensureSecret(raw, client, secret, owner?.uid === raw.metadata.uid);
    const registered = await this.#registered(namespace ?? 'default');
    const isRegistered = registered.get(credentials.clientId) === hashClientSecret(credentials.clientSecret);
    const state: ReadyState = isRegistered
      ? { status: 'True', reason: Reasons.Registered, message: `client ${credentials.clientId} is registered with the auth server; its credentials are in Secret ${secretName} (keys client_id, client_secret)` }
      : { status: 'False', reason: Reasons.Registering, message: `credentials are in Secret ${secretName}; waiting for the auth server's client registry (Secret ${CLIENT_REGISTRY_SECRET}) to list client ${credentials.clientId}` };
    await this.#writeStatus(raw, secretName, state, credentials.clientId);
    return {};
  }

  /**
   * The client ids of the namespace's registry, parsed once per version of the Secret: a registry
   * change wakes every client of the namespace, and each must not read and parse it again.
   */
  async #registered(namespace: string): Promise<Map<string, string>> {
    const cached = this.#d.caches.secrets.get(namespace, CLIENT_REGISTRY_SECRET);
    if (cached === undefined) return new Map();
    const memo = this.#registries.get(namespace);
    if (memo !== undefined && memo.resourceVersion === cached.metadata.resourceVersion) return memo.ids;
    const live = await this.#d.client.get(resourceTypes.secret, namespace, CLIENT_REGISTRY_SECRET);
    const ids = registeredClientIds(live);
    if (live?.metadata.resourceVersion !== undefined) this.#registries.set(namespace, { resourceVersion: live.metadata.resourceVersion, ids });
    return ids;
  }

  async #ensureSecret(raw: KubeObject, client: OAuthClient, secret: KubeObject | undefined, ownedByThis: boolean): Promise<ClientCredentials> {
    const wantedRotation = raw.metadata.annotations?.[ROTATE_SECRET_ANNOTATION];
    const existing = ownedByThis ? credentialsOf(secret) : undefined;
    if (secret === undefined) {
      const credentials = generateCredentials(client);
      try {
        await this.#d.applier.create(oauthClientSecret(client, credentials, wantedRotation));
      } catch (err) {
        // Created meanwhile (a stale read): never overwrite it; the retry reads it.
        if (isConflict(err)) throw new Error(`Secret ${oauthClientSecretName(client.metadata.name)} appeared while creating it; retrying`, { cause: err });
        throw err;
      }
      this.#d.events.event(raw, 'Normal', EventReasons.CredentialsGenerated, `generated client ${credentials.clientId} into Secret ${oauthClientSecretName(client.metadata.name)}`);
      return credentials;
    }
    const rotatedFor = secret.metadata.annotations?.[ROTATED_FOR_ANNOTATION];
    if (existing !== undefined && (wantedRotation === undefined || wantedRotation === rotatedFor)) {
      // Keep the values; re-apply only metadata drift (labels, owner) — usually a skipped no-op.
      await this.#d.applier.apply(oauthClientSecret(client, existing, rotatedFor), this.#d.caches.secrets);
      return existing;
    }
    // Rotation asked for, or the Secret is unusable / left over from an older OAuthClient of this name.
    const credentials = generateCredentials(client, existing?.clientId);
    await this.#d.applier.force(oauthClientSecret(client, credentials, wantedRotation ?? rotatedFor));
    const why = existing === undefined ? 'the Secret held no usable credentials' : `rotation "${wantedRotation ?? ''}" was asked for`;
    this.#d.events.event(raw, 'Normal', EventReasons.SecretRotated, `generated a new client secret for ${credentials.clientId}: ${why}`);
    return credentials;
  }

  async #writeStatus(raw: KubeObject, secretName: string | undefined, state: ReadyState, clientId?: string): Promise<void> {
    const fields: Record<string, unknown> = {};
    if (clientId !== undefined) fields['clientId'] = clientId;
    if (secretName !== undefined) fields['secretName'] = secretName;
    await this.#d.applier.applyStatus(raw, readyStatus(raw, state, this.#d.clock.now(), fields));
  }
}
