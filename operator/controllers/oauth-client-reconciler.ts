// OAuthClient reconciler: its Secret (client_id, client_secret) generated ONCE — created with a
// POST that fails if the Secret exists, after a live read when the cache has none, so neither a
// stale cache nor an operator restart can ever replace a secret a client already uses — and the
// status (clientId, secretName, Ready once the auth server's registry lists the client).
// get -> parse -> read the Secret -> pure plan (plan-oauth-client.ts) -> the Secret -> status.
import type { Logger } from 'pino';
import type { OAuthClient } from '../api/index.ts';
import { CLIENT_REGISTRY_SECRET, oauthClientSecretName } from '../resources/auth/names.ts';
import { registeredClientIds } from '../resources/auth/client-registry-secret.ts';
import {
  generateCredentials,
  oauthClientSecret,
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
import { EventReasons, readyStatus, type EventReason, type ReadyState } from './conditions.ts';
import {
  oauthClientReadyState,
  parseOAuthClient,
  planOAuthClient,
  type SecretAction,
} from './plan-oauth-client.ts';

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
    const parsed = parseOAuthClient(raw);
    if (parsed.state !== undefined) return this.#refuse(raw, undefined, parsed.state);
    // The cache holds Secrets' metadata only: the credentials are read live.
    const secret = await this.#d.client.get(
      resourceTypes.secret,
      namespace,
      oauthClientSecretName(name),
    );
    const plan = planOAuthClient(raw, parsed.client, secret);
    if (!plan.ok) return this.#refuse(raw, plan.secretName, plan.state);
    const credentials = await this.#ensureSecret(raw, parsed.client, plan.secret);
    const registered = await this.#registered(namespace ?? 'default');
    await this.#writeStatus(
      raw,
      plan.secretName,
      oauthClientReadyState(credentials, plan.secretName, registered),
      credentials.clientId,
    );
    return {};
  }

  async #refuse(
    raw: KubeObject,
    secretName: string | undefined,
    state: ReadyState & { status: 'False' },
  ): Promise<ReconcileResult> {
    this.#d.events.event(raw, 'Warning', state.reason, state.message);
    await this.#writeStatus(raw, secretName, state);
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
    if (memo !== undefined && memo.resourceVersion === cached.metadata.resourceVersion)
      return memo.ids;
    const live = await this.#d.client.get(resourceTypes.secret, namespace, CLIENT_REGISTRY_SECRET);
    const ids = registeredClientIds(live);
    if (live?.metadata.resourceVersion !== undefined)
      this.#registries.set(namespace, { resourceVersion: live.metadata.resourceVersion, ids });
    return ids;
  }

  /** The Secret as the plan says; the credentials it holds afterwards. */
  async #ensureSecret(
    raw: KubeObject,
    client: OAuthClient,
    action: SecretAction,
  ): Promise<ClientCredentials> {
    const secretName = oauthClientSecretName(client.metadata.name);
    if (action.kind === 'keep') {
      await this.#d.applier.apply(
        oauthClientSecret(client, action.credentials, action.rotation),
        this.#d.caches.secrets,
      );
      return action.credentials;
    }
    if (action.kind === 'create') {
      const credentials = generateCredentials(client);
      try {
        await this.#d.applier.create(oauthClientSecret(client, credentials, action.rotation));
      } catch (err) {
        // Created meanwhile (a stale read): never overwrite it; the retry reads it.
        if (isConflict(err))
          throw new Error(`Secret ${secretName} appeared while creating it; retrying`, {
            cause: err,
          });
        throw err;
      }
      this.#d.events.event(
        raw,
        'Normal',
        EventReasons.CredentialsGenerated,
        `generated client ${credentials.clientId} into Secret ${secretName}`,
      );
      return credentials;
    }
    const credentials = generateCredentials(client, action.clientId);
    await this.#d.applier.force(oauthClientSecret(client, credentials, action.rotation));
    this.#d.events.event(
      raw,
      'Normal',
      EventReasons.SecretRotated,
      `generated a new client secret for ${credentials.clientId}: ${action.why}`,
    );
    return credentials;
  }

  async #writeStatus(
    raw: KubeObject,
    secretName: string | undefined,
    state: ReadyState,
    clientId?: string,
  ): Promise<void> {
    const fields: Record<string, unknown> = {};
    if (clientId !== undefined) fields['clientId'] = clientId;
    if (secretName !== undefined) fields['secretName'] = secretName;
    await this.#d.applier.applyStatus(raw, readyStatus(raw, state, this.#d.clock.now(), fields));
  }
}
