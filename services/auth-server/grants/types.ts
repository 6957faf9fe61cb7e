import type { FastifyBaseLogger } from 'fastify';
import type { RegisteredClient } from '../../../lib/config/client-registry.ts';
import type { AuthContext } from '../context.ts';
import type { TokenResponse } from '../issue-tokens.ts';
import type { Params } from '../params.ts';

/** One grant type of the token endpoint (a registry entry, after node-oidc-provider's layout). */
export interface Grant {
  /** The grant_types value a client must be registered for. */
  readonly registeredAs: 'authorization_code' | 'refresh_token';
  handle(
    ctx: AuthContext,
    client: RegisteredClient,
    params: Params,
    log: FastifyBaseLogger,
  ): Promise<TokenResponse>;
}
