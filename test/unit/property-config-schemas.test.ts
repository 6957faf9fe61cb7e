// Every config schema rejects malformed documents with a message naming the field:
// the sidecar config file, the RateLimitRoute and OAuthClient custom resources (operator/api) and
// the auth server's environment, client registry, users file and signing-keys file.
//
// For each schema: a complete valid document (every optional field set, so that every field can
// be broken); then EVERY single mutation the schema's own JSON Schema says must fail (wrong type,
// required field removed, unknown key in a closed object, out of range, off pattern, outside the
// enum) is applied and the parser must reject it with a message naming the field's path; then
// fast-check combines random pairs of mutations and feeds arbitrary JSON values and text.
import fc from 'fast-check';
import { stringify } from 'yaml';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { z } from 'zod';
import { oauthClientSchema, rateLimitRouteSchema } from '../../operator/api/index.ts';
import {
  authServerConfigSchema,
  loadAuthServerConfig,
  parseJsonFile,
} from '../../lib/config/auth-server.ts';
import { clientRegistrySchema } from '../../lib/config/client-registry.ts';
import { signingKeysFileSchema } from '../../lib/config/signing-keys-file.ts';
import { usersFileSchema } from '../../lib/config/users-file.ts';
import {
  ConfigError,
  parseSidecarConfig,
  parseSidecarConfigText,
  sidecarConfigSchema,
} from '../../lib/config/sidecar.ts';
import { recordCases } from '../harness/reliability-counts.ts';
import {
  mutationsOf,
  type Json,
  type Mutation,
  type MutationOptions,
} from '../harness/schema-mutations.ts';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 300);

/** Formats zod issues the way the operator's status messages do: `path: message; ...`. */
function describeZod(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length === 0 ? '(root)' : i.path.join('.')}: ${i.message}`)
    .join('; ');
}

const validateCr = (schema: z.ZodType) => (doc: unknown) => {
  const r = schema.safeParse(doc);
  if (!r.success) throw new Error(`invalid object: ${describeZod(r.error)}`);
};

interface Target {
  readonly name: string;
  readonly schema: z.ZodType;
  readonly valid: Json;
  /** Throws with the message a person would see. */
  readonly parse: (doc: Json) => void;
  readonly options?: MutationOptions;
}

const sidecarDoc: Json = {
  listen: { host: '127.0.0.1', port: 8080 },
  admin: { host: '127.0.0.1', port: 9090 },
  upstream: {
    url: 'http://127.0.0.1:8081',
    connectTimeoutMs: 2000,
    timeoutMs: 30000,
    bodyTimeoutMs: 30000,
    connections: 16,
  },
  route: { id: 'all', path: '/**' },
  limiter: {
    replenishRate: 20,
    burstCapacity: 100,
    requestedTokens: 3,
    keyHeader: 'USER-ID',
    onMissingKey: { status: 400 },
    onStoreError: 'allow',
    headers: { fields: true, draft: true, spring: false },
  },
  redis: {
    url: 'redis://127.0.0.1:6379',
    passwordFile: '/etc/redis/password',
    keyPrefix: 'p:',
    commandTimeoutMs: 50,
    connectTimeoutMs: 2000,
  },
  shutdownGraceMs: 10000,
  logLevel: 'info',
};

const routeDoc: Json = {
  apiVersion: 'portcullis.dev/v1alpha1',
  kind: 'RateLimitRoute',
  metadata: { name: 'all', namespace: 'default', generation: 3, labels: { app: 'x' } },
  spec: {
    target: {
      image: 'example/user-service:1.0',
      command: ['node'],
      args: ['services/user-service/main.ts'],
      port: 8080,
      readinessPath: '/healthcheck/ready',
      replicas: 2,
      env: [
        { name: 'LOG_LEVEL', value: 'info' },
        { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'tok', key: 'token' } } },
      ],
      resources: { limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: '50m' } },
    },
    path: '/**',
    limiter: {
      replenishRate: 20,
      burstCapacity: 100,
      requestedTokens: 3,
      keyHeader: 'USER-ID',
      onMissingKey: { status: 400 },
      onStoreError: 'deny',
    },
    redis: { url: 'redis://redis:6379' },
  },
  status: {
    observedGeneration: 3,
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        observedGeneration: 3,
        lastTransitionTime: '2026-01-01T00:00:00Z',
        reason: 'Reconciled',
        message: 'ok',
      },
    ],
    readyReplicas: 2,
    service: 'all',
  },
};

const clientDoc: Json = {
  apiVersion: 'portcullis.dev/v1alpha1',
  kind: 'OAuthClient',
  metadata: { name: 'demo-app' },
  spec: {
    displayName: 'Demo App',
    redirectUris: ['https://app.example.com/callback'],
    scopes: ['profile', 'email'],
    grantTypes: ['authorization_code', 'refresh_token'],
    tokenEndpointAuthMethod: 'client_secret_basic',
  },
  status: { observedGeneration: 1, clientId: 'abc', secretName: 'demo-app-oauth-client' },
};

const b64u43 = 'A'.repeat(43);
const registryDoc: Json = {
  clients: [
    {
      client_id: 'demo-client',
      client_secret_hash: `sha256:${b64u43}`,
      display_name: 'Demo',
      redirect_uris: ['http://localhost:3000/callback'],
      scopes: ['profile', 'email'],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
};

const usersDoc: Json = {
  users: [
    {
      username: 'alice',
      password_hash: '$scrypt$ln=15,r=8,p=1$c2FsdHNhbHQ=$aGFzaGhhc2g=',
      profile: {
        name: 'Alice',
        given_name: 'Alice',
        family_name: 'L',
        preferred_username: 'alice',
        picture: 'https://x.example/a.png',
        locale: 'en',
        zoneinfo: 'UTC',
        email: 'alice@example.com',
        email_verified: true,
      },
    },
  ],
};

const keysDoc: Json = {
  keys: [
    { kty: 'EC', crv: 'P-256', alg: 'ES256', kid: 'k1', use: 'sig', x: 'abc', y: 'def', d: 'ghi' },
  ],
};

const envDoc: Json = {
  PORT: '9000',
  HOST: '127.0.0.1',
  AUTH_ISSUER: 'http://localhost:9000',
  AUTH_CLIENTS_FILE: '/etc/auth/clients.json',
  AUTH_USERS_FILE: '/etc/auth/users.json',
  AUTH_KEYS_FILE: '/etc/auth/keys.json',
  AUTH_SIGNING_ALG: 'ES256',
  REDIS_URL: 'redis://127.0.0.1:6379',
  AUTH_AUDIENCE: 'urn:portcullis:user-service',
  AUTH_ACCESS_TOKEN_TTL_SECONDS: '300',
  AUTH_REFRESH_TOKEN_TTL_SECONDS: '86400',
  AUTH_CODE_TTL_SECONDS: '60',
  AUTH_INTERACTION_TTL_SECONDS: '600',
  AUTH_SIGNIN_USER_ADDRESS_BURST: '10',
  AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: '6',
  AUTH_SIGNIN_USER_BURST: '100',
  AUTH_SIGNIN_USER_PER_MINUTE: '30',
  AUTH_SIGNIN_ADDRESS_BURST: '30',
  AUTH_SIGNIN_ADDRESS_PER_MINUTE: '30',
  AUTH_TRUST_PROXY: 'false',
  AUTH_FILE_CHECK_MS: '1000',
  LOG_LEVEL: 'info',
};

const targets: Target[] = [
  {
    name: 'sidecar config',
    schema: sidecarConfigSchema,
    valid: sidecarDoc,
    parse: (d) => void parseSidecarConfig(d),
  },
  {
    name: 'sidecar config (YAML text)',
    schema: sidecarConfigSchema,
    valid: sidecarDoc,
    parse: (d) => void parseSidecarConfigText(stringify(d)),
  },
  {
    name: 'RateLimitRoute',
    schema: rateLimitRouteSchema,
    valid: routeDoc,
    parse: validateCr(rateLimitRouteSchema),
  },
  {
    name: 'OAuthClient',
    schema: oauthClientSchema,
    valid: clientDoc,
    parse: validateCr(oauthClientSchema),
  },
  {
    name: 'auth-server client registry',
    schema: clientRegistrySchema,
    valid: registryDoc,
    parse: (d) => void parseJsonFile(clientRegistrySchema, JSON.stringify(d), 'client registry'),
  },
  {
    name: 'auth-server users file',
    schema: usersFileSchema,
    valid: usersDoc,
    parse: (d) => void parseJsonFile(usersFileSchema, JSON.stringify(d), 'users file'),
  },
  {
    name: 'auth-server signing keys',
    schema: signingKeysFileSchema,
    valid: keysDoc,
    parse: (d) => void parseJsonFile(signingKeysFileSchema, JSON.stringify(d), 'signing keys'),
  },
  {
    name: 'auth-server environment',
    schema: authServerConfigSchema,
    valid: envDoc,
    parse: (d) => void loadAuthServerConfig(d as Record<string, string>),
    options: { envStrings: true },
  },
];

function messageOf(parse: (doc: Json) => void, doc: Json): string | undefined {
  try {
    parse(doc);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

function expectRejectedNaming(t: Target, m: Mutation, doc: Json): void {
  const message = messageOf(t.parse, doc);
  expect(message, `${t.name}: ${m.what} was accepted`).toBeDefined();
  const path = m.path.join('.');
  if (path !== '') expect(message, `${t.name}: ${m.what}`).toContain(path);
  expect(message, `${t.name}: ${m.what}`).toContain(m.mustName);
}

describe.each(targets)('$name', (t) => {
  const mutations = mutationsOf(t.schema, t.valid, t.options);

  it('accepts the complete valid document', () => {
    expect(messageOf(t.parse, t.valid)).toBeUndefined();
  });

  it('rejects every single malformed field with a message naming it', () => {
    expect(mutations.length).toBeGreaterThan(10);
    for (const m of mutations) {
      recordCases(`schema mutations: ${t.name}`, 1);
      expectRejectedNaming(t, m, m.apply(t.valid));
    }
  });

  it('rejects random pairs of malformed fields, naming at least one of them', () => {
    fc.assert(
      fc.property(fc.constantFrom(...mutations), fc.constantFrom(...mutations), (a, b) => {
        recordCases(`schema mutations: ${t.name}`, 1);
        let doc: Json;
        try {
          doc = b.apply(a.apply(t.valid));
        } catch {
          return; // the second mutation's parent was removed by the first
        }
        const message = messageOf(t.parse, doc);
        expect(message, `${a.what} + ${b.what} accepted`).toBeDefined();
        const named = [a, b].some(
          (m) =>
            (message as string).includes(m.path.join('.')) &&
            (message as string).includes(m.mustName),
        );
        expect(named, `${a.what} + ${b.what}: ${message}`).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('rejects arbitrary JSON values with a message, never an unexpected exception', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        recordCases(`schema random documents: ${t.name}`, 1);
        const message = messageOf(t.parse, value as Json);
        // Almost nothing random is valid; when it is rejected the message must say why.
        if (message !== undefined) expect(message).toMatch(/: /);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('sidecar config text', () => {
  it('any text that is not a valid config is a ConfigError naming the problem (never a YAML or type error)', () => {
    // The yaml parser warns (process warnings) about odd tags and directives in random text.
    const emitWarning = process.emitWarning;
    process.emitWarning = () => {};
    onTestFinished(() => {
      process.emitWarning = emitWarning;
    });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          fc.string({ unit: 'binary', maxLength: 300 }),
          fc.constantFrom(
            '{',
            ': :',
            '- a\n b: [',
            '\u0000',
            'limiter: !!binary x',
            '*a',
            '&a [*a]',
          ),
        ),
        (text) => {
          recordCases('schema random documents: sidecar config text', 1);
          try {
            parseSidecarConfigText(text);
          } catch (err) {
            expect(err).toBeInstanceOf(ConfigError);
            expect((err as Error).message).toMatch(/^invalid sidecar config: /);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('regressions found by the mutation fuzzer', () => {
  it('a malformed upstream.url is a ConfigError naming upstream.url (was a bare "Invalid URL" TypeError from the origin refinement)', () => {
    const doc = structuredClone(sidecarDoc) as { upstream: { url: string } };
    doc.upstream.url = 'not a uri';
    expect(() => parseSidecarConfig(doc)).toThrow(ConfigError);
    expect(() => parseSidecarConfig(doc)).toThrow(/upstream\.url: /);
  });
});
