// Every OAuthClient of a namespace -> the auth server's client registry (clients.json, schema
// clientRegistrySchema of lib/config/client-registry.ts): ids, secret HASHES (never secrets),
// redirect URIs, scopes, auth methods, and the resource-server, consent-skip and insecure-redirect flags. Sorted by client_id
// so that the same clients render the same bytes.
import type { V1Secret } from '@kubernetes/client-node';
import type { OAuthClient } from '../../api/index.ts';
import { hashClientSecret } from '../../../lib/config/auth-server.ts';
import { clientRegistrySchema, type ClientRegistry } from '../../../lib/config/client-registry.ts';
import type { KubeObject } from '../../runtime/kube-object.ts';
import { CLIENT_REGISTRY_KEY, CLIENT_REGISTRY_SECRET } from './names.ts';
import {
  base64,
  authServerLabels,
  fromBase64,
  type Owner,
  sortedOwnerRefs,
} from '../shared/metadata.ts';
import type { ClientCredentials } from './oauth-client-secret.ts';

export interface RegisteredOAuthClient {
  client: OAuthClient;
  credentials: ClientCredentials;
}

export function clientRegistry(entries: readonly RegisteredOAuthClient[]): ClientRegistry {
  const clients = [...entries]
    .sort((a, b) =>
      a.credentials.clientId < b.credentials.clientId
        ? -1
        : a.credentials.clientId > b.credentials.clientId
          ? 1
          : 0,
    )
    .map(({ client, credentials }) => ({
      client_id: credentials.clientId,
      client_secret_hash: hashClientSecret(credentials.clientSecret),
      display_name: client.spec.displayName,
      redirect_uris: [...client.spec.redirectUris],
      scopes: [...client.spec.scopes],
      grant_types: [...client.spec.grantTypes],
      token_endpoint_auth_method: client.spec.tokenEndpointAuthMethod,
      // Written only when set, so that the registry of existing clients keeps its bytes (and hash).
      ...(client.spec.allowInsecureRedirectUris === true
        ? { allow_insecure_redirect_uris: true }
        : {}),
      ...(client.spec.resourceServer === true ? { resource_server: true } : {}),
      ...(client.spec.tokenEndpointAuthMethods !== undefined
        ? { token_endpoint_auth_methods: [...client.spec.tokenEndpointAuthMethods] }
        : {}),
      ...(client.spec.skipConsent === true ? { skip_consent: true } : {}),
      ...(client.spec.postLogoutRedirectUris !== undefined
        ? { post_logout_redirect_uris: [...client.spec.postLogoutRedirectUris] }
        : {}),
    }));
  // The auth server's own schema: the operator never writes a registry the server would refuse.
  return clientRegistrySchema.parse({ clients });
}

/**
 * owners: every OAuthClient of the namespace (registered yet or not), so that the registry always
 * has an owner (the operator's cache keeps only owned objects); entries default to them.
 */
export function clientRegistrySecret(
  namespace: string,
  entries: readonly RegisteredOAuthClient[],
  owners: readonly Owner[] = entries.map((e) => e.client),
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: CLIENT_REGISTRY_SECRET,
      namespace,
      labels: authServerLabels('client-registry'),
      ownerReferences: sortedOwnerRefs(owners),
    },
    type: 'Opaque',
    data: {
      [CLIENT_REGISTRY_KEY]: base64(`${JSON.stringify(clientRegistry(entries), null, 2)}\n`),
    },
  } satisfies V1Secret;
}

/** The client ids a registry Secret lists (for status: "is this client registered yet?"). */
export function registeredClientIds(secret: KubeObject | undefined): Map<string, string> {
  const ids = new Map<string, string>();
  const data = secret?.['data'];
  if (typeof data !== 'object' || data === null) return ids;
  const text = fromBase64((data as Record<string, unknown>)[CLIENT_REGISTRY_KEY]);
  if (text === undefined) return ids;
  try {
    const parsed = clientRegistrySchema.safeParse(JSON.parse(text));
    if (parsed.success)
      for (const c of parsed.data.clients) ids.set(c.client_id, c.client_secret_hash ?? '');
  } catch {
    // not JSON: nothing registered
  }
  return ids;
}
