// A confidential client registered with both token endpoint authentication methods
// (token_endpoint_auth_methods) may use either, e.g. replicas built on different libraries; a
// client registered with one keeps being refused the other.
import { describe, expect, it } from 'vitest';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import { stackOn } from '../harness/fixtures.ts';
import { authorize, tokenRequest } from '../harness/auth-flow.ts';
import { SECRETS } from '../harness/auth-stack.ts';

const BOTH_SECRET = 'both-client-secret-0123456789abcdef0123456789';

describe.each(['memory', 'redis'] as const)(
  'token endpoint authentication methods (%s store)',
  (store) => {
    const on = stackOn(store, {
      extraClients: [
        {
          client_id: 'both-client',
          client_secret_hash: hashClientSecret(BOTH_SECRET),
          display_name: 'Both Methods',
          redirect_uris: ['http://127.0.0.1:1/callback'],
          scopes: ['profile'],
          grant_types: ['authorization_code'],
          token_endpoint_auth_method: 'client_secret_basic',
          token_endpoint_auth_methods: ['client_secret_basic', 'client_secret_post'],
        },
      ],
    });

    async function code(clientId: string): Promise<string> {
      const { location } = await authorize({
        issuer: on.stack().issuer,
        clientId,
        redirectUri: on.stack().redirectUri,
      });
      return location.searchParams.get('code') ?? '';
    }

    it('a client listing both methods authenticates with Basic and with the secret in the body', async () => {
      const exchange = { grant_type: 'authorization_code', redirect_uri: on.stack().redirectUri };
      const basic = await tokenRequest(
        on.stack().issuer,
        { ...exchange, code: await code('both-client') },
        { basic: ['both-client', BOTH_SECRET] },
      );
      expect(basic.status).toBe(200);
      const post = await tokenRequest(on.stack().issuer, {
        ...exchange,
        code: await code('both-client'),
        client_id: 'both-client',
        client_secret: BOTH_SECRET,
      });
      expect(post.status).toBe(200);
    });

    it('a client registered for Basic only is refused the secret in the body', async () => {
      const res = await tokenRequest(on.stack().issuer, {
        grant_type: 'authorization_code',
        redirect_uri: on.stack().redirectUri,
        code: await code('basic-client'),
        client_id: 'basic-client',
        client_secret: SECRETS.basic,
      });
      expect(res.status).toBe(401);
      expect(res.json['error']).toBe('invalid_client');
    });
  },
);
