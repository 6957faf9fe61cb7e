// The auth server's file formats and the helpers the operator uses to produce them.
import { describe, expect, it } from 'vitest';
import {
  generateSigningJwks,
  hashClientSecret,
  loadAuthServerConfig,
  parseJsonFile,
} from '../../lib/config/auth-server.ts';
import { clientRegistrySchema } from '../../lib/config/client-registry.ts';
import { signingKeysFileSchema } from '../../lib/config/signing-keys-file.ts';
import { usersFileSchema } from '../../lib/config/users-file.ts';
import { generateClientSecret, verifyClientSecret } from '../../lib/config/client-secret.ts';
import { hashPassword, parsePasswordHash, verifyPassword } from '../../lib/config/passwords.ts';

const client = {
  client_id: 'app',
  client_secret_hash: hashClientSecret('s'),
  display_name: 'App',
  redirect_uris: ['https://app.example.com/callback'],
  scopes: ['profile'],
};

describe('auth-server configuration', () => {
  it('has the documented defaults and names bad fields', () => {
    const config = loadAuthServerConfig({
      AUTH_CLIENTS_FILE: '/c.json',
      AUTH_USERS_FILE: '/u.json',
    });
    expect(config).toMatchObject({
      PORT: 9000,
      AUTH_ISSUER: 'http://localhost:9000',
      AUTH_SIGNING_ALG: 'ES256',
      AUTH_CODE_TTL_SECONDS: 60,
      AUTH_ACCESS_TOKEN_TTL_SECONDS: 300,
    });
    expect(
      loadAuthServerConfig({
        AUTH_CLIENTS_FILE: 'c',
        AUTH_USERS_FILE: 'u',
        AUTH_ISSUER: 'https://id.example.com/',
      }).AUTH_ISSUER,
    ).toBe('https://id.example.com');
    expect(() =>
      loadAuthServerConfig({ AUTH_USERS_FILE: 'u', AUTH_CODE_TTL_SECONDS: '9999' }),
    ).toThrow(/AUTH_CLIENTS_FILE.*AUTH_CODE_TTL_SECONDS/);
    expect(() =>
      loadAuthServerConfig({
        AUTH_CLIENTS_FILE: 'c',
        AUTH_USERS_FILE: 'u',
        AUTH_ISSUER: 'https://x.example/?a=1',
      }),
    ).toThrow(/AUTH_ISSUER/);
  });
});

describe('client registry', () => {
  it('defaults grant types and auth method; a confidential client needs a secret hash, a public one has none', () => {
    const parsed = clientRegistrySchema.parse({ clients: [client] });
    expect(parsed.clients[0]).toMatchObject({
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(
      clientRegistrySchema.safeParse({ clients: [{ ...client, client_secret_hash: undefined }] })
        .success,
    ).toBe(false);
    expect(
      clientRegistrySchema.safeParse({
        clients: [{ ...client, token_endpoint_auth_method: 'none' }],
      }).success,
    ).toBe(false);
    expect(
      clientRegistrySchema.safeParse({
        clients: [{ ...client, client_secret_hash: undefined, token_endpoint_auth_method: 'none' }],
      }).success,
    ).toBe(true);
  });

  it('rejects fragments in redirect URIs, duplicate ids, unknown keys and non-sha256 hashes', () => {
    expect(
      clientRegistrySchema.safeParse({
        clients: [{ ...client, redirect_uris: ['https://a.example/cb#x'] }],
      }).success,
    ).toBe(false);
    expect(clientRegistrySchema.safeParse({ clients: [client, client] }).success).toBe(false);
    expect(clientRegistrySchema.safeParse({ clients: [{ ...client, extra: 1 }] }).success).toBe(
      false,
    );
    expect(
      clientRegistrySchema.safeParse({
        clients: [{ ...client, client_secret_hash: 'plain-secret' }],
      }).success,
    ).toBe(false);
  });

  it('parseJsonFile names the file and the field', () => {
    expect(() =>
      parseJsonFile(clientRegistrySchema, '{"clients":[{"client_id":""}]}', 'clients.json'),
    ).toThrow(/^clients\.json: clients\.0\.client_id/);
    expect(() => parseJsonFile(clientRegistrySchema, 'nope', 'clients.json')).toThrow(
      /clients\.json: not JSON/,
    );
  });
});

describe('secrets and passwords', () => {
  it('client secrets: 256-bit, stored as sha256:<base64url>, verified in constant time', () => {
    const secret = generateClientSecret();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const hash = hashClientSecret(secret);
    expect(hash).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
    expect(verifyClientSecret(secret, hash)).toBe(true);
    expect(verifyClientSecret(`${secret}x`, hash)).toBe(false);
    expect(verifyClientSecret(secret, 'sha256:short')).toBe(false);
  });

  it('passwords: scrypt PHC strings that validate against the users schema', async () => {
    const hash = await hashPassword('wonderland', { ln: 10, r: 8, p: 1 });
    expect(parsePasswordHash(hash)?.params).toEqual({ ln: 10, r: 8, p: 1 });
    expect(await verifyPassword('wonderland', hash)).toBe(true);
    expect(await verifyPassword('Wonderland', hash)).toBe(false);
    expect(await verifyPassword('wonderland', 'not-a-hash')).toBe(false);
    expect(await verifyPassword('x', '$scrypt$ln=30,r=8,p=1$AAAA$AAAA')).toBe(false);
    expect(
      usersFileSchema.safeParse({
        users: [{ username: 'alice', password_hash: hash, profile: { name: 'Alice' } }],
      }).success,
    ).toBe(true);
    expect(
      usersFileSchema.safeParse({ users: [{ username: 'alice', password_hash: 'wonderland' }] })
        .success,
    ).toBe(false);
  });
});

describe('signing keys', () => {
  it('generates ES256 by default; a rotation prepends a new key and keeps the old ones', async () => {
    const first = await generateSigningJwks();
    expect(first.keys).toHaveLength(1);
    expect(first.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    const rotated = await generateSigningJwks({ alg: 'RS256', existing: first });
    expect(rotated.keys.map((k) => k.alg)).toEqual(['RS256', 'ES256']);
    expect(rotated.keys[1]).toEqual(first.keys[0]);
    const trimmed = await generateSigningJwks({ existing: rotated, keep: 2 });
    expect(trimmed.keys.map((k) => k.kid)).toEqual([trimmed.keys[0]?.kid, rotated.keys[0]?.kid]);
    expect(signingKeysFileSchema.parse(JSON.parse(JSON.stringify(trimmed)))).toEqual(trimmed);
  });

  it('refuses keys without kid, public-only keys and duplicate kids', async () => {
    const file = await generateSigningJwks();
    const key = file.keys[0];
    if (key === undefined || key.kty !== 'EC') throw new Error('expected an EC key');
    expect(signingKeysFileSchema.safeParse({ keys: [{ ...key, kid: undefined }] }).success).toBe(
      false,
    );
    expect(signingKeysFileSchema.safeParse({ keys: [{ ...key, d: undefined }] }).success).toBe(
      false,
    );
    expect(signingKeysFileSchema.safeParse({ keys: [key, key] }).success).toBe(false);
  });
});
