// The generated CRDs install on a real API server, invalid specs are
// rejected with messages that say what to fix, and `kubectl explain` shows the descriptions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  INSECURE_REDIRECT_URI_RULE,
  KEY_JWT_FIELDS_RULE,
  LIMITER_FORM_RULE,
  OAUTH_CLIENT_NAME_RULE,
  REDIRECT_URI_RULE,
  REDIS_URL_CREDENTIALS_RULE,
  REQUESTED_TOKENS_RULE,
  RULE_NAMES_RULE,
  SINGLE_LIMIT_RULE,
} from '../../operator/api/index.ts';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';

let cluster: Cluster;

beforeAll(async () => {
  cluster = await startCluster();
  const applied = await cluster.kubectl(['apply', '--server-side', '-f', 'crds/']);
  expect(applied.code, applied.stderr).toBe(0);
  const established = await cluster.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/ratelimitroutes.portcullis.dev',
    'crd/oauthclients.portcullis.dev',
  ]);
  expect(established.code, established.stderr).toBe(0);
});
afterAll(async () => {
  await cluster?.stop();
});

function route(
  name: string,
  limiter: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name, namespace: 'default' },
    spec: { target: { image: 'example/user-service:1.0' }, limiter, ...extra },
  };
}

function client(name: string, redirectUris: string[]) {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'OAuthClient',
    metadata: { name, namespace: 'default' },
    spec: { displayName: 'Demo App', redirectUris },
  };
}

const apply = (obj: unknown) => cluster.kubectl(['apply', '-f', '-'], { input: stringify(obj) });

describe('the CRDs on a real API server', () => {
  it('accept a valid RateLimitRoute and fill in the defaults', async () => {
    const res = await apply(
      route('all', { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 }),
    );
    expect(res.code, res.stderr).toBe(0);
    const got = await cluster.kubectl(['get', 'ratelimitroute', 'all', '-o', 'json']);
    const spec = JSON.parse(got.stdout).spec;
    expect(spec.path).toBe('/**');
    expect(spec.limiter).toEqual({
      replenishRate: 20,
      burstCapacity: 100,
      requestedTokens: 3,
      unmatched: 'forward',
      enforce: true,
      key: { source: 'header' },
      keyHeader: 'USER-ID',
      onMissingKey: { status: 400 },
      onStoreError: 'allow',
    });
    expect(spec.target).toMatchObject({ port: 8080, readinessPath: '/healthcheck/ready' });
    expect(spec.target.replicas).toBeUndefined(); // no default: omitted leaves the count to an autoscaler
  });

  it('show key source, rate, burst, cost and enforce as printer columns under the short name', async () => {
    const res = await cluster.kubectl(['get', 'rlr', 'all']);
    expect(res.stdout).toMatch(/NAME\s+KEY\s+RATE\s+BURST\s+COST\s+ENFORCE\s+READY\s+STATUS\s+AGE/);
    expect(res.stdout).toMatch(/all\s+header\s+20\s+100\s+3\s+true\s/);
  });

  it('leave an absent requestedTokens absent (no default: it would turn a rules-form route into both forms)', async () => {
    const res = await apply(route('no-cost', { replenishRate: 2, burstCapacity: 10 }));
    expect(res.code, res.stderr).toBe(0);
    const spec = JSON.parse(
      (await cluster.kubectl(['get', 'rlr', 'no-cost', '-o', 'json'])).stdout,
    ).spec;
    expect(spec.limiter).not.toHaveProperty('requestedTokens');
  });

  const limit = { replenishRate: 1, burstCapacity: 10 };
  it('accept a rules route: rule paths default to /**, nothing of the single-limit form is filled in', async () => {
    const res = await apply(
      route('rules', {
        rules: [
          {
            name: 'writes',
            path: '/api/**',
            methods: ['POST', 'PUT'],
            limits: [
              { replenishRate: 1, burstCapacity: 5, requestedTokens: 2 },
              { replenishRate: 10, burstCapacity: 600 },
              limit,
              limit,
            ],
            enforce: false,
          },
          { name: 'rest', limits: [limit] },
        ],
        unmatched: 'refuse',
      }),
    );
    expect(res.code, res.stderr).toBe(0);
    const limiter = JSON.parse(
      (await cluster.kubectl(['get', 'rlr', 'rules', '-o', 'json'])).stdout,
    ).spec.limiter;
    expect(limiter.rules.map((r: { name: string; path: string }) => [r.name, r.path])).toEqual([
      ['writes', '/api/**'],
      ['rest', '/**'],
    ]);
    expect(limiter.rules[0].limits).toHaveLength(4);
    expect(limiter).toMatchObject({
      unmatched: 'refuse',
      enforce: true,
      key: { source: 'header' },
    });
    for (const field of ['replenishRate', 'burstCapacity', 'requestedTokens'])
      expect(limiter).not.toHaveProperty(field);
  });

  it('accept a jwt route and show it in the printer columns', async () => {
    const res = await apply(
      route('jwt', {
        rules: [{ name: 'all', limits: [limit] }],
        enforce: false,
        key: {
          source: 'jwt',
          claim: 'client_id',
          audience: 'api://orders',
          issuer: { url: 'https://id.example.com' },
        },
      }),
    );
    expect(res.code, res.stderr).toBe(0);
    const limiter = JSON.parse((await cluster.kubectl(['get', 'rlr', 'jwt', '-o', 'json'])).stdout)
      .spec.limiter;
    expect(limiter.key).toEqual({
      source: 'jwt',
      claim: 'client_id',
      audience: 'api://orders',
      issuer: { url: 'https://id.example.com' },
    });
    const table = await cluster.kubectl(['get', 'rlr', 'jwt']);
    expect(table.stdout).toMatch(/^jwt\s+jwt\s+false\s+/m); // rate, burst and cost are blank with rules
  });

  it.each([
    [
      'duplicate rule names',
      {
        rules: [
          { name: 'a', limits: [limit] },
          { name: 'b', limits: [limit] },
          { name: 'a', limits: [limit] },
        ],
      },
      'spec.limiter.rules',
      RULE_NAMES_RULE,
    ],
    [
      '5 limits in a rule',
      { rules: [{ name: 'a', limits: [limit, limit, limit, limit, limit] }] },
      'spec.limiter.rules[0].limits',
      'must have at most 4 items',
    ],
    [
      'requestedTokens > burstCapacity inside a limit',
      {
        rules: [
          {
            name: 'a',
            limits: [limit, { replenishRate: 1, burstCapacity: 2, requestedTokens: 3 }],
          },
        ],
      },
      'spec.limiter.rules[0].limits[1].requestedTokens',
      REQUESTED_TOKENS_RULE,
    ],
    [
      'both forms at once',
      { ...limit, rules: [{ name: 'a', limits: [limit] }] },
      'spec.limiter',
      LIMITER_FORM_RULE,
    ],
    ['neither form', { keyHeader: 'X-User' }, 'spec.limiter', LIMITER_FORM_RULE],
    [
      'a single form without burstCapacity',
      { replenishRate: 1, requestedTokens: 1 },
      'spec.limiter',
      SINGLE_LIMIT_RULE,
    ],
    [
      'jwt settings with source header',
      { ...limit, key: { claim: 'sub' } },
      'spec.limiter.key',
      KEY_JWT_FIELDS_RULE,
    ],
    [
      'duplicate methods',
      { rules: [{ name: 'a', methods: ['GET', 'GET'], limits: [limit] }] },
      'spec.limiter.rules[0].methods[1]',
      'Duplicate value: "GET"',
    ],
  ])('reject %s, saying so', async (_what, limiter, field, message) => {
    const res = await apply(route('bad-limiter', limiter));
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(`${field}: `);
    expect(res.stderr).toContain(message);
  });

  it('reject duplicate rule names natively too (the list is keyed by name)', async () => {
    const res = await apply(
      route('dup-rules', {
        rules: [
          { name: 'a', limits: [limit] },
          { name: 'a', limits: [limit] },
        ],
      }),
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('spec.limiter.rules[1]: Duplicate value: {"name":"a"}');
    expect(res.stderr).toContain(RULE_NAMES_RULE);
  });

  it('reject requestedTokens > burstCapacity with the rule as the message', async () => {
    const res = await apply(
      route('too-costly', { replenishRate: 1, burstCapacity: 2, requestedTokens: 3 }),
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('spec.limiter.requestedTokens');
    expect(res.stderr).toContain(REQUESTED_TOKENS_RULE);
  });

  it.each([
    ['replenishRate', 0],
    ['replenishRate', -5],
    ['burstCapacity', 0],
    ['requestedTokens', 0],
  ])('reject %s = %d (rates and sizes are >= 1)', async (field, value) => {
    const res = await apply(
      route('bad-rate', { replenishRate: 1, burstCapacity: 10, [field]: value }),
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(`spec.limiter.${field}`);
    expect(res.stderr).toMatch(/should be greater than or equal to 1/);
  });

  it('reject an unknown field, naming it', async () => {
    const res = await apply(
      route('typo', { replenishRate: 1, burstCapacity: 10, burstCapactiy: 5 }),
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('unknown field "spec.limiter.burstCapactiy"');
  });

  it('reject a route whose name cannot name a Service', async () => {
    const res = await apply(
      route('9-starts-with-a-digit', { replenishRate: 1, burstCapacity: 10 }),
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('DNS-1035');
  });

  it('reject both redis.url and redis.secretRef', async () => {
    const res = await apply(
      route(
        'two-redis',
        { replenishRate: 1, burstCapacity: 10 },
        { redis: { url: 'redis://r:6379', secretRef: { name: 's', key: 'url' } } },
      ),
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('set exactly one of url and secretRef');
  });

  it('reject a redis.url with a password, pointing at redis.secretRef and without echoing it', async () => {
    for (const url of ['redis://:s3cret-pw@redis:6379', 'rediss://default:s3cret-pw@redis:6380']) {
      const res = await apply(
        route('redis-password', { replenishRate: 1, burstCapacity: 10 }, { redis: { url } }),
      );
      expect(res.code, url).not.toBe(0);
      expect(res.stderr).toContain('spec.redis.url');
      expect(res.stderr).toContain(REDIS_URL_CREDENTIALS_RULE);
      expect(res.stderr).not.toContain('s3cret-pw');
    }
    const plain = await apply(
      route(
        'redis-plain',
        { replenishRate: 1, burstCapacity: 10 },
        { redis: { url: 'redis://redis:6379' } },
      ),
    );
    expect(plain.code, plain.stderr).toBe(0);
  });

  it('check resource quantities as a Pod spec would: integers and quantity strings pass, other strings are refused', async () => {
    const sidecar = (resources: Record<string, unknown>) => ({ sidecar: { resources } });
    const ok = await apply(
      route(
        'quantities',
        { replenishRate: 1, burstCapacity: 10 },
        sidecar({ requests: { cpu: '50m', memory: 134217728 }, limits: { memory: '256Mi' } }),
      ),
    );
    expect(ok.code, ok.stderr).toBe(0);
    const bad = await apply(
      route(
        'bad-quantity',
        { replenishRate: 1, burstCapacity: 10 },
        sidecar({ limits: { memory: 'lots' } }),
      ),
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('spec.sidecar.resources.limits.memory');
    expect(bad.stderr).toMatch(/should match/);
  });

  it('accept an OAuthClient and reject a redirect URI that is not absolute', async () => {
    const ok = await apply(client('demo-app', ['https://app.example.com/callback']));
    expect(ok.code, ok.stderr).toBe(0);
    const got = JSON.parse(
      (await cluster.kubectl(['get', 'oac', 'demo-app', '-o', 'json'])).stdout,
    ).spec;
    expect(got).toMatchObject({
      scopes: ['profile'],
      grantTypes: ['authorization_code'],
      tokenEndpointAuthMethod: 'client_secret_basic',
    });

    for (const bad of [
      '/callback',
      'app.example.com/callback',
      'https://app.example.com/cb#fragment',
    ]) {
      const res = await apply(client('bad-redirect', [bad]));
      expect(res.code, bad).not.toBe(0);
      expect(res.stderr, bad).toContain(REDIRECT_URI_RULE);
    }
  });

  it('reject http redirect URIs to hosts that are not loopback, unless allowInsecureRedirectUris', async () => {
    for (const bad of [
      'http://app.example.com/cb',
      'http://localhost.example.com/cb',
      'http://127.0.0.1@evil.example/cb',
    ]) {
      const res = await apply(client('plain-http', ['https://app.example.com/cb', bad]));
      expect(res.code, bad).not.toBe(0);
      expect(res.stderr, bad).toContain(INSECURE_REDIRECT_URI_RULE);
    }
    const loopback = await apply(
      client('native-app', [
        'http://localhost:3000/cb',
        'http://127.0.0.1/cb',
        'http://[::1]:8080/cb',
      ]),
    );
    expect(loopback.code, loopback.stderr).toBe(0);
    const lab = client('lab-app', ['http://app.example.com/cb']);
    const allowed = await apply({
      ...lab,
      spec: { ...lab.spec, allowInsecureRedirectUris: true, resourceServer: true },
    });
    expect(allowed.code, allowed.stderr).toBe(0);
  });

  it('reject an OAuthClient name longer than a label value (its Secret carries it as one)', async () => {
    const ok = await apply(client('c'.repeat(63), ['https://a.example/cb']));
    expect(ok.code, ok.stderr).toBe(0);
    const res = await apply(client('c'.repeat(64), ['https://a.example/cb']));
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(OAUTH_CLIENT_NAME_RULE);
  });

  it('reject duplicate redirect URIs and unknown grant types', async () => {
    const dup = await apply(client('dup', ['https://a.example/cb', 'https://a.example/cb']));
    expect(dup.code).not.toBe(0);
    expect(dup.stderr).toMatch(/Duplicate value/);
    const grant = await apply({
      ...client('grant', ['https://a.example/cb']),
      spec: { displayName: 'x', redirectUris: ['https://a.example/cb'], grantTypes: ['password'] },
    });
    expect(grant.code).not.toBe(0);
    expect(grant.stderr).toContain('supported values: "authorization_code", "refresh_token"');
  });

  it('have a status subresource that keeps the spec out of status writes', async () => {
    const res = await cluster.kubectl([
      'patch',
      'ratelimitroute',
      'all',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { observedGeneration: 1, readyReplicas: 0 } }),
    ]);
    expect(res.code, res.stderr).toBe(0);
    const got = JSON.parse((await cluster.kubectl(['get', 'rlr', 'all', '-o', 'json'])).stdout);
    expect(got.status).toEqual({ observedGeneration: 1, readyReplicas: 0 });
    expect(got.metadata.generation).toBe(1);
  });

  it('are documented: kubectl explain ratelimitroute.spec.limiter shows the descriptions', async () => {
    // The API server publishes a new CRD's OpenAPI a moment after it is established.
    let out = '';
    for (let i = 0; i < 60; i++) {
      const res = await cluster.kubectl(['explain', 'ratelimitroute.spec.limiter']);
      out = res.stdout + res.stderr;
      if (res.code === 0 && out.includes('replenishRate')) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    out = out.replace(/\s+/g, ' '); // kubectl wraps long descriptions
    expect(out).toContain('Token-bucket limiter of the route');
    expect(out).toContain('replenishRate');
    expect(out).toContain('Single-limit form: tokens restored to each bucket per second');
    expect(out).toContain('onStoreError');
    expect(out).not.toMatch(/specification|end-to-end/i);
    const rules = await cluster.kubectl(['explain', 'ratelimitroute.spec.limiter.rules.limits']);
    expect(rules.stdout.replace(/\s+/g, ' ')).toContain('Tokens one request costs');
    const client = await cluster.kubectl(['explain', 'oauthclient.spec.redirectUris']);
    expect(client.stdout.replace(/\s+/g, ' ')).toContain('must equal one of them exactly');
  });
});
