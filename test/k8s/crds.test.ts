// Issue 4, k8s test 1: the generated CRDs install on a real API server, invalid specs are
// rejected with messages that say what to fix, and `kubectl explain` shows the descriptions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { INSECURE_REDIRECT_URI_RULE, REDIRECT_URI_RULE, REQUESTED_TOKENS_RULE } from '../../operator/api/index.ts';
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

function route(name: string, limiter: Record<string, unknown>, extra: Record<string, unknown> = {}) {
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
    const res = await apply(route('all', { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 }));
    expect(res.code, res.stderr).toBe(0);
    const got = await cluster.kubectl(['get', 'ratelimitroute', 'all', '-o', 'json']);
    const spec = JSON.parse(got.stdout).spec;
    expect(spec.path).toBe('/**');
    expect(spec.limiter).toEqual({ replenishRate: 20, burstCapacity: 100, requestedTokens: 3, keyHeader: 'USER-ID', onMissingKey: { status: 400 }, onStoreError: 'allow' });
    expect(spec.target).toMatchObject({ port: 8080, readinessPath: '/healthcheck/ready', replicas: 1 });
  });

  it('show rate, burst and cost as printer columns under the short name', async () => {
    const res = await cluster.kubectl(['get', 'rlr']);
    expect(res.stdout).toMatch(/NAME\s+RATE\s+BURST\s+COST/);
    expect(res.stdout).toMatch(/all\s+20\s+100\s+3/);
  });

  it('reject requestedTokens > burstCapacity with the rule as the message', async () => {
    const res = await apply(route('too-costly', { replenishRate: 1, burstCapacity: 2, requestedTokens: 3 }));
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
    const res = await apply(route('bad-rate', { replenishRate: 1, burstCapacity: 10, [field]: value }));
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(`spec.limiter.${field}`);
    expect(res.stderr).toMatch(/should be greater than or equal to 1/);
  });

  it('reject an unknown field, naming it', async () => {
    const res = await apply(route('typo', { replenishRate: 1, burstCapacity: 10, burstCapactiy: 5 }));
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('unknown field "spec.limiter.burstCapactiy"');
  });

  it('reject a route whose name cannot name a Service', async () => {
    const res = await apply(route('9-starts-with-a-digit', { replenishRate: 1, burstCapacity: 10 }));
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('DNS-1035');
  });

  it('reject both redis.url and redis.secretRef', async () => {
    const res = await apply(
      route('two-redis', { replenishRate: 1, burstCapacity: 10 }, { redis: { url: 'redis://r:6379', secretRef: { name: 's', key: 'url' } } }),
    );
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('set exactly one of url and secretRef');
  });

  it('accept an OAuthClient and reject a redirect URI that is not absolute', async () => {
    const ok = await apply(client('demo-app', ['https://app.example.com/callback']));
    expect(ok.code, ok.stderr).toBe(0);
    const got = JSON.parse((await cluster.kubectl(['get', 'oac', 'demo-app', '-o', 'json'])).stdout).spec;
    expect(got).toMatchObject({ scopes: ['profile'], grantTypes: ['authorization_code'], tokenEndpointAuthMethod: 'client_secret_basic' });

    for (const bad of ['/callback', 'app.example.com/callback', 'https://app.example.com/cb#fragment']) {
      const res = await apply(client('bad-redirect', [bad]));
      expect(res.code, bad).not.toBe(0);
      expect(res.stderr, bad).toContain(REDIRECT_URI_RULE);
    }
  });

  it('reject http redirect URIs to hosts that are not loopback, unless allowInsecureRedirectUris', async () => {
    for (const bad of ['http://app.example.com/cb', 'http://localhost.example.com/cb', 'http://127.0.0.1@evil.example/cb']) {
      const res = await apply(client('plain-http', ['https://app.example.com/cb', bad]));
      expect(res.code, bad).not.toBe(0);
      expect(res.stderr, bad).toContain(INSECURE_REDIRECT_URI_RULE);
    }
    const loopback = await apply(client('native-app', ['http://localhost:3000/cb', 'http://127.0.0.1/cb', 'http://[::1]:8080/cb']));
    expect(loopback.code, loopback.stderr).toBe(0);
    const lab = client('lab-app', ['http://app.example.com/cb']);
    const allowed = await apply({ ...lab, spec: { ...lab.spec, allowInsecureRedirectUris: true, resourceServer: true } });
    expect(allowed.code, allowed.stderr).toBe(0);
  });

  it('reject duplicate redirect URIs and unknown grant types', async () => {
    const dup = await apply(client('dup', ['https://a.example/cb', 'https://a.example/cb']));
    expect(dup.code).not.toBe(0);
    expect(dup.stderr).toMatch(/Duplicate value/);
    const grant = await apply({ ...client('grant', ['https://a.example/cb']), spec: { displayName: 'x', redirectUris: ['https://a.example/cb'], grantTypes: ['password'] } });
    expect(grant.code).not.toBe(0);
    expect(grant.stderr).toContain('supported values: "authorization_code", "refresh_token"');
  });

  it('have a status subresource that keeps the spec out of status writes', async () => {
    const res = await cluster.kubectl([
      'patch', 'ratelimitroute', 'all', '--subresource=status', '--type=merge',
      '-p', JSON.stringify({ status: { observedGeneration: 1, readyReplicas: 0 } }),
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
    expect(out).toContain('Tokens restored to each bucket per second');
    expect(out).toContain('onStoreError');
    const client = await cluster.kubectl(['explain', 'oauthclient.spec.redirectUris']);
    expect(client.stdout.replace(/\s+/g, ' ')).toContain('must equal one of them exactly');
  });
});
