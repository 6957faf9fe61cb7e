// The auth server as the OpenID Connect issuer of a real kube-apiserver: the API server runs with
// a structured AuthenticationConfiguration (the one docs/concepts/auth-server.md gives) whose JWT issuer is
// the auth server behind an https front with its own CA, as an Ingress would serve it. An id_token
// from the code flow (what kubectl sends after kubelogin) authenticates the user with their groups,
// RBAC bound to a prefixed group grants exactly what it says, and a token for another audience is
// refused.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../harness/eventually.ts';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';
import { starter } from '../harness/fixtures.ts';
import { startTlsFront, type TlsFront } from '../harness/tls-front.ts';
import { authorize, pkce, tokenRequest } from '../harness/auth-flow.ts';
import { SECRETS, type Stack } from '../harness/auth-stack.ts';
import { hashClientSecret } from '../../lib/config/auth-server.ts';

/** The client kubectl signs in as through kubelogin: confidential, as an OAuthClient registers it, and with PKCE. */
const KUBERNETES_CLIENT = 'kubernetes';
const KUBERNETES_SECRET = 'kubernetes-client-secret-0123456789abcdef0123';
/** kubelogin's loopback redirect. */
const KUBELOGIN_REDIRECT = 'http://localhost:8000';

/** The AuthenticationConfiguration of docs/concepts/auth-server.md, with the test's issuer and CA. */
function authenticationConfiguration(issuer: string, caPem: string): Record<string, unknown> {
  return {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AuthenticationConfiguration',
    jwt: [
      {
        issuer: { url: issuer, audiences: [KUBERNETES_CLIENT], certificateAuthority: caPem },
        claimMappings: {
          username: { claim: 'sub', prefix: '' },
          groups: { claim: 'groups', prefix: 'oidc:' },
        },
      },
    ],
  };
}

const start = starter();
let front: TlsFront;
let stack: Stack;
let cluster: Cluster;
/** A kubeconfig with the cluster and no credentials: each command passes --token. */
let tokenKubeconfig: string;

beforeAll(async () => {
  front = await startTlsFront();
  start.defer(() => front.stop());
  stack = await start.authStack({
    issuer: front.url,
    extraClients: [
      {
        client_id: KUBERNETES_CLIENT,
        display_name: 'kubectl',
        redirect_uris: [KUBELOGIN_REDIRECT],
        scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
        grant_types: ['authorization_code', 'refresh_token'],
        client_secret_hash: hashClientSecret(KUBERNETES_SECRET),
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
  });
  front.setTarget(stack.authUrls[0] ?? '');
  // The auth server is up before the API server, which reads the issuer's discovery at start.
  cluster = await startCluster({
    authenticationConfig: authenticationConfiguration(front.url, front.caPem),
  });
  start.defer(() => cluster.stop());
  // This process signs in through the front and calls the API server: trust both CAs beside the usual ones.
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), front.caPem, cluster.caPem]);
  tokenKubeconfig = path.join(cluster.dir, 'token-only.kubeconfig');
  writeFileSync(
    tokenKubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'test',
          cluster: {
            server: cluster.server,
            'certificate-authority-data': Buffer.from(cluster.caPem).toString('base64'),
          },
        },
      ],
      users: [{ name: 'bearer', user: {} }],
      contexts: [{ name: 'bearer', context: { cluster: 'test', user: 'bearer' } }],
      'current-context': 'bearer',
    }),
    { mode: 0o600 },
  );
});
afterAll(() => start.stopAll());

/** The code flow through the https front, as kubelogin runs it; the token response's JSON. */
async function codeFlow(
  clientId: string,
  secret: string,
  scope: string,
): Promise<Record<string, unknown>> {
  const { verifier, challenge } = pkce();
  const redirectUri = clientId === KUBERNETES_CLIENT ? KUBELOGIN_REDIRECT : stack.redirectUri;
  const { location } = await authorize({
    issuer: front.url,
    clientId,
    redirectUri,
    scope,
    challenge,
  });
  const code = location.searchParams.get('code');
  if (code === null) throw new Error(`no code in ${location.toString()}`);
  const body = {
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    code_verifier: verifier,
  };
  const res = await tokenRequest(front.url, body, { basic: [clientId, secret] });
  if (res.status !== 200)
    throw new Error(`token request answered ${res.status}: ${JSON.stringify(res.json)}`);
  return res.json;
}

function idToken(tokens: Record<string, unknown>): string {
  const t = tokens['id_token'];
  if (typeof t !== 'string') throw new Error('no id_token in the token response');
  return t;
}

const asUser = (token: string, args: readonly string[]) =>
  cluster.kubectl(['--token', token, ...args], { kubeconfig: tokenKubeconfig });

interface Review {
  status: { userInfo: { username: string; groups: string[] } };
}

describe('kube-apiserver with the auth server as its JWT issuer', () => {
  it('an id_token from the code flow authenticates `kubectl auth whoami` as the user with prefixed groups', async () => {
    const token = idToken(
      await codeFlow(KUBERNETES_CLIENT, KUBERNETES_SECRET, 'openid profile email groups'),
    );
    // The API server fetches the issuer's discovery and JWKS in the background after it starts.
    const review = await eventually(
      'whoami as alice',
      async () => {
        const r = await asUser(token, ['auth', 'whoami', '-o', 'json']);
        return r.code === 0 ? (JSON.parse(r.stdout) as Review) : false;
      },
      60_000,
      500,
    );
    expect(review.status.userInfo.username).toBe('alice');
    expect(review.status.userInfo.groups).toEqual([
      'oidc:readers',
      'oidc:wonderland-admins',
      'system:authenticated',
    ]);
  });

  it('RBAC bound to the group oidc:readers grants get pods in one namespace and nothing more', async () => {
    const token = idToken(await codeFlow(KUBERNETES_CLIENT, KUBERNETES_SECRET, 'openid groups'));
    const admin = async (args: string[], input?: string) => {
      const r = await cluster.kubectl(args, input === undefined ? {} : { input });
      expect(r.code, r.stderr).toBe(0);
    };
    for (const ns of ['wonderland', 'looking-glass']) {
      await admin(['create', 'namespace', ns]);
      // No controller-manager here: the ServiceAccount admission of a Pod needs the default one made by hand.
      await admin(['create', 'serviceaccount', 'default', '-n', ns]);
    }
    const pod = (ns: string) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'rabbit', namespace: ns },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      });
    await admin(['create', '-f', '-'], pod('wonderland'));
    await admin(['create', '-f', '-'], pod('looking-glass'));

    const canI = async (verb: string, resource: string, ns: string) =>
      (await asUser(token, ['auth', 'can-i', verb, resource, '-n', ns])).stdout.trim();
    // Before the binding: nothing.
    await eventually(
      'authenticated as alice',
      async () => (await asUser(token, ['auth', 'whoami'])).code === 0,
      60_000,
      500,
    );
    expect(await canI('get', 'pods', 'wonderland')).toBe('no');

    await admin([
      'create',
      'role',
      'pod-reader',
      '-n',
      'wonderland',
      '--verb=get',
      '--resource=pods',
    ]);
    await admin([
      'create',
      'rolebinding',
      'readers-read-pods',
      '-n',
      'wonderland',
      '--role=pod-reader',
      '--group=oidc:readers',
    ]);
    // A binding to the unprefixed group name matches nobody signed in through the issuer.
    await admin([
      'create',
      'role',
      'secret-reader',
      '-n',
      'wonderland',
      '--verb=get',
      '--resource=secrets',
    ]);
    await admin([
      'create',
      'rolebinding',
      'unprefixed',
      '-n',
      'wonderland',
      '--role=secret-reader',
      '--group=readers',
    ]);

    expect(
      await eventually(
        'the binding applies',
        async () => (await canI('get', 'pods', 'wonderland')) === 'yes' || undefined,
        30_000,
      ),
    ).toBe(true);
    expect(await canI('list', 'pods', 'wonderland')).toBe('no');
    expect(await canI('delete', 'pods', 'wonderland')).toBe('no');
    expect(await canI('get', 'pods', 'looking-glass')).toBe('no');
    expect(await canI('get', 'secrets', 'wonderland')).toBe('no');

    // And the API server enforces it on real requests, not only in can-i.
    const got = await asUser(token, [
      'get',
      'pod',
      'rabbit',
      '-n',
      'wonderland',
      '-o',
      'jsonpath={.metadata.name}',
    ]);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toBe('rabbit');
    const listed = await asUser(token, ['get', 'pods', '-n', 'wonderland']);
    expect(listed.code).not.toBe(0);
    expect(listed.stderr).toMatch(/forbidden: User "alice" cannot list resource "pods"/);
    const elsewhere = await asUser(token, ['get', 'pod', 'rabbit', '-n', 'looking-glass']);
    expect(elsewhere.code).not.toBe(0);
    expect(elsewhere.stderr).toMatch(/forbidden: User "alice" cannot get resource "pods"/);
  });

  it("a token for another audience is refused with 401: another client's id_token, the access token", async () => {
    // Authenticating works, so a refusal below is the audience's, not an issuer not yet loaded.
    const ours = idToken(await codeFlow(KUBERNETES_CLIENT, KUBERNETES_SECRET, 'openid groups'));
    await eventually(
      'authenticated as alice',
      async () => (await asUser(ours, ['auth', 'whoami'])).code === 0,
      60_000,
      500,
    );

    const other = await codeFlow('oidc-client', SECRETS.oidc, 'openid profile groups');
    for (const [what, token] of [
      ['oidc-client id_token', idToken(other)],
      ['access token (aud: the user service)', String(other['access_token'])],
    ] as const) {
      const res = await fetch(
        `${cluster.server}/apis/authentication.k8s.io/v1/selfsubjectreviews`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'SelfSubjectReview',
          }),
        },
      );
      expect(res.status, what).toBe(401);
      const r = await asUser(token, ['auth', 'whoami']);
      expect(r.code, what).not.toBe(0);
      expect(r.stderr, what).toMatch(/Unauthorized/);
    }
  });
});
