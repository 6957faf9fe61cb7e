// OAuthClient -> its Secret (client_id, client_secret). Values are generated once by the
// reconciler and passed in; this builder only shapes the object.
import type { V1Secret } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { CLIENT_ID_KEY, CLIENT_SECRET_KEY, type OAuthClient } from '../../api/index.ts';
import { generateClientSecret } from '../../../lib/config/client-secret.ts';
import type { KubeObject } from '../../runtime/kube-object.ts';
import { oauthClientSecretName } from './names.ts';
import {
  base64,
  baseLabels,
  controllerRef,
  fromBase64,
  OAUTH_CLIENT_LABEL,
} from '../shared/metadata.ts';

/** Annotation on the OAuthClient: set or change its value to ask for a new client secret. */
export const ROTATE_SECRET_ANNOTATION = 'portcullis.dev/rotate-secret';
/** Annotation on the Secret: the rotate-secret value its current secret answers. */
export const ROTATED_FOR_ANNOTATION = 'portcullis.dev/rotated-for';

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

/** A fresh client id (readable prefix + 48 random bits) and a 256-bit secret (the auth server's generator). */
export function generateCredentials(
  client: OAuthClient,
  existingClientId?: string,
): ClientCredentials {
  const prefix = client.metadata.name.slice(0, 100);
  return {
    clientId: existingClientId ?? `${prefix}-${randomBytes(6).toString('hex')}`,
    clientSecret: generateClientSecret(),
  };
}

/** The credentials held by a Secret, or undefined when it lacks either key. */
export function credentialsOf(secret: KubeObject | undefined): ClientCredentials | undefined {
  const data = secret?.['data'];
  if (typeof data !== 'object' || data === null) return undefined;
  const record = data as Record<string, unknown>;
  const clientId = fromBase64(record[CLIENT_ID_KEY]);
  const clientSecret = fromBase64(record[CLIENT_SECRET_KEY]);
  return clientId !== undefined &&
    clientSecret !== undefined &&
    clientId !== '' &&
    clientSecret !== ''
    ? { clientId, clientSecret }
    : undefined;
}

export function oauthClientSecret(
  client: OAuthClient,
  credentials: ClientCredentials,
  rotatedFor: string | undefined,
): KubeObject {
  const name = client.metadata.name;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: oauthClientSecretName(name),
      namespace: client.metadata.namespace,
      labels: {
        ...baseLabels('portcullis-oauth-client', name, 'oauth-client'),
        [OAUTH_CLIENT_LABEL]: name,
      },
      ...(rotatedFor === undefined
        ? {}
        : { annotations: { [ROTATED_FOR_ANNOTATION]: rotatedFor } }),
      ownerReferences: [controllerRef(client)],
    },
    type: 'Opaque',
    data: {
      [CLIENT_ID_KEY]: base64(credentials.clientId),
      [CLIENT_SECRET_KEY]: base64(credentials.clientSecret),
    },
  } satisfies V1Secret;
}
