// An OAuthClient's desired state as a pure function of it and what the reconciler read (its
// Secret, the auth server's registry): what to do with the Secret and the Ready condition. The
// credentials themselves are random, so the plan says when to generate them and the reconciler does.
import { oauthClientSchema, type OAuthClient } from '../api/index.ts';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import { CLIENT_REGISTRY_SECRET, oauthClientSecretName } from '../resources/auth/names.ts';
import {
  credentialsOf,
  ROTATE_SECRET_ANNOTATION,
  ROTATED_FOR_ANNOTATION,
  type ClientCredentials,
} from '../resources/auth/oauth-client-secret.ts';
import { controllerOf } from '../resources/shared/metadata.ts';
import type { KubeObject } from '../runtime/kube-object.ts';
import { Reasons, type ReadyState } from './conditions.ts';
import { describeIssues } from './spec-issues.ts';

/** What to do with the client's Secret. `rotation`: the annotation value the Secret records (portcullis.dev/rotated-for). */
export type SecretAction =
  /** None exists: generate credentials and create it (never overwriting one made meanwhile). */
  | { kind: 'create'; rotation: string | undefined }
  /** Keep the values; re-apply only metadata drift (labels, owner), usually a skipped no-op. */
  | { kind: 'keep'; credentials: ClientCredentials; rotation: string | undefined }
  /** Rotation asked for, or the Secret is unusable or left over from an older OAuthClient of this name: new credentials, the client id kept when there is one. */
  | { kind: 'rotate'; clientId: string | undefined; rotation: string | undefined; why: string };

export type OAuthClientPlan =
  | { ok: true; secretName: string; secret: SecretAction }
  /** Nothing to write but the status: `reason` is the condition's and the Warning Event's. */
  | { ok: false; secretName: string; state: ReadyState & { status: 'False' } };

/** The OAuthClient as the operator reads it, or the InvalidSpec condition. */
export function parseOAuthClient(
  raw: KubeObject,
):
  | { client: OAuthClient; state?: undefined }
  | { client?: undefined; state: ReadyState & { status: 'False' } } {
  const parsed = oauthClientSchema.safeParse(raw);
  if (parsed.success) return { client: parsed.data };
  return {
    state: {
      status: 'False',
      reason: Reasons.InvalidSpec,
      message: `spec is invalid: ${describeIssues(parsed.error)}; fix the OAuthClient`,
    },
  };
}

/** raw: the OAuthClient as cached, client: as parsed; secret: its Secret as read live (undefined: none). */
export function planOAuthClient(
  raw: KubeObject,
  client: OAuthClient,
  secret: KubeObject | undefined,
): OAuthClientPlan {
  const secretName = oauthClientSecretName(client.metadata.name);
  const owner = secret === undefined ? undefined : controllerOf(secret, 'OAuthClient');
  if (secret !== undefined && (owner === undefined || owner.name !== client.metadata.name)) {
    const message = `Secret ${secretName} exists and is not owned by this OAuthClient; delete or rename it so the operator can generate the client's credentials`;
    return {
      ok: false,
      secretName,
      state: { status: 'False', reason: Reasons.SecretConflict, message },
    };
  }
  const wantedRotation = raw.metadata.annotations?.[ROTATE_SECRET_ANNOTATION];
  if (secret === undefined)
    return { ok: true, secretName, secret: { kind: 'create', rotation: wantedRotation } };
  const existing = owner?.uid === raw.metadata.uid ? credentialsOf(secret) : undefined;
  const rotatedFor = secret.metadata.annotations?.[ROTATED_FOR_ANNOTATION];
  if (existing !== undefined && (wantedRotation === undefined || wantedRotation === rotatedFor)) {
    return {
      ok: true,
      secretName,
      secret: { kind: 'keep', credentials: existing, rotation: rotatedFor },
    };
  }
  const why =
    existing === undefined
      ? 'the Secret held no usable credentials'
      : `rotation "${wantedRotation ?? ''}" was asked for`;
  return {
    ok: true,
    secretName,
    secret: {
      kind: 'rotate',
      clientId: existing?.clientId,
      rotation: wantedRotation ?? rotatedFor,
      why,
    },
  };
}

/** Ready once the auth server's registry lists the client with this very secret. registered: client id -> secret hash. */
export function oauthClientReadyState(
  credentials: ClientCredentials,
  secretName: string,
  registered: ReadonlyMap<string, string>,
): ReadyState {
  return registered.get(credentials.clientId) === hashClientSecret(credentials.clientSecret)
    ? {
        status: 'True',
        reason: Reasons.Registered,
        message: `client ${credentials.clientId} is registered with the auth server; its credentials are in Secret ${secretName} (keys client_id, client_secret)`,
      }
    : {
        status: 'False',
        reason: Reasons.Registering,
        message: `credentials are in Secret ${secretName}; waiting for the auth server's client registry (Secret ${CLIENT_REGISTRY_SECRET}) to list client ${credentials.clientId}`,
      };
}
