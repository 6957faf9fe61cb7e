// OAuthClients against a real kube-apiserver, the operator running as the chart's ServiceAccount
// (so the chart's RBAC is proven enough). Without a garbage collector here, the registry's "drop on delete"
// is the operator's own doing (the namespace reconcile rebuilds it from the clients that exist).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import {
  eventually,
  kget,
  operatorForbidden,
  operatorIdle,
  operatorWrites,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';

const NS = 'team-o';
let env: OperatorEnv;
let operator: RunningOperator;
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const client = (name: string) => `apiVersion: portcullis.dev/v1alpha1
kind: OAuthClient
metadata: { name: ${name}, namespace: ${NS} }
spec:
  displayName: Demo App ${name}
  redirectUris: [https://app.example.com/callback]
  scopes: [profile, email]
`;

const decode = (s: string) => Buffer.from(s, 'base64').toString('utf8');

beforeAll(async () => {
  env = await startOperatorEnv([NS]);
  operator = await startOperator(env, 'op-oauth-1');
});
afterAll(async () => {
  await operator?.program.stop();
  await env?.stop();
});

async function credentials(name: string): Promise<{ id: string; secret: string } | undefined> {
  const s = (await kget(env.cluster, ['-n', NS, 'secret', `${name}-oauth-client`])) as
    Obj | undefined;
  return s === undefined
    ? undefined
    : { id: decode(s['data']['client_id']), secret: decode(s['data']['client_secret']) };
}

async function registry(): Promise<Array<Record<string, unknown>>> {
  const s = (await kget(env.cluster, ['-n', NS, 'secret', 'portcullis-auth-clients'])) as
    Obj | undefined;
  return s === undefined ? [] : JSON.parse(decode(s['data']['clients.json']))['clients'];
}

describe('operator: OAuthClient on a real API server, as the chart ServiceAccount', () => {
  it('generates the client Secret, registers the hash (not the secret), and reports clientId/secretName', async () => {
    const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: client('demo-app') });
    expect(r.code, r.stderr).toBe(0);
    const status = await eventually('Registered', async () => {
      const o = (await kget(env.cluster, ['-n', NS, 'oauthclient', 'demo-app'])) as Obj;
      return o['status']?.['conditions']?.[0]?.['reason'] === 'Registered'
        ? o['status']
        : undefined;
    });
    const creds = await credentials('demo-app');
    expect(creds?.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(status).toMatchObject({
      clientId: creds?.id,
      secretName: 'demo-app-oauth-client',
      observedGeneration: 1,
    });
    const entries = await registry();
    expect(entries).toEqual([
      expect.objectContaining({
        client_id: creds?.id,
        client_secret_hash: hashClientSecret(creds?.secret ?? ''),
        redirect_uris: ['https://app.example.com/callback'],
      }),
    ]);
    expect(JSON.stringify(entries)).not.toContain(creds?.secret);
    const secret = (await kget(env.cluster, ['-n', NS, 'secret', 'demo-app-oauth-client'])) as Obj;
    expect(secret['metadata']['ownerReferences']).toEqual([
      expect.objectContaining({ kind: 'OAuthClient', name: 'demo-app', controller: true }),
    ]);
  });

  it('the auth-server Deployment and Service reference the right Secrets', async () => {
    const dep = (await eventually('auth-server', () =>
      kget(env.cluster, ['-n', NS, 'deployment', 'portcullis-auth-server']),
    )) as Obj;
    const pod = dep['spec']['template']['spec'];
    expect(
      pod['volumes'].filter((v: Obj) => v['secret']).map((v: Obj) => v['secret']['secretName']),
    ).toEqual(['portcullis-auth-clients', 'portcullis-auth-users', 'portcullis-auth-signing-keys']);
    expect(pod['containers'][0]['command']).toEqual(['node', 'dist/auth-server/main.mjs']);
    const env0 = Object.fromEntries(
      pod['containers'][0]['env'].map((e: Obj) => [e['name'], e['value']]),
    );
    expect(env0['AUTH_ISSUER']).toBe(`http://portcullis-auth-server.${NS}.svc`);
    const keys = (await kget(env.cluster, [
      '-n',
      NS,
      'secret',
      'portcullis-auth-signing-keys',
    ])) as Obj;
    expect(JSON.parse(decode(keys['data']['keys.json']))['keys']).toHaveLength(1);
    expect(await kget(env.cluster, ['-n', NS, 'service', 'portcullis-auth-server'])).toBeDefined();
  });

  it('an operator restart changes neither the client secret nor the signing keys, and writes nothing', async () => {
    const before = await credentials('demo-app');
    const keysBefore = (
      (await kget(env.cluster, ['-n', NS, 'secret', 'portcullis-auth-signing-keys'])) as Obj
    )['data'];
    await operatorIdle(operator);
    await operator.program.stop();
    const since = new Date().toISOString();
    operator = await startOperator(env, 'op-oauth-2');
    await eventually('new operator reconciled', async () =>
      /controllers started/.test(operator.program.lines.join('\n')),
    );
    await operatorIdle(operator); // its first reconcile of everything is done
    expect(await credentials('demo-app')).toEqual(before);
    expect(
      ((await kget(env.cluster, ['-n', NS, 'secret', 'portcullis-auth-signing-keys'])) as Obj)[
        'data'
      ],
    ).toEqual(keysBefore);
    expect(operatorWrites(env, since)).toEqual([]);
  });

  it('deleting an OAuthClient removes it from the registry; deleting the last removes the auth server', async () => {
    const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: client('second') });
    expect(r.code, r.stderr).toBe(0);
    const second = await eventually('second credentials', () => credentials('second'));
    const first = await credentials('demo-app');
    await eventually('both registered', async () => (await registry()).length === 2);
    const del = await env.cluster.kubectl(['-n', NS, 'delete', 'oauthclient', 'demo-app']);
    expect(del.code, del.stderr).toBe(0);
    await eventually('dropped from the registry', async () => {
      const ids = (await registry()).map((c) => c['client_id']);
      return ids.length === 1 && ids[0] === second.id;
    });
    expect((await registry()).map((c) => c['client_id'])).not.toContain(first?.id);
    const del2 = await env.cluster.kubectl(['-n', NS, 'delete', 'oauthclient', 'second']);
    expect(del2.code, del2.stderr).toBe(0);
    await eventually(
      'auth server pruned',
      async () =>
        (await kget(env.cluster, ['-n', NS, 'deployment', 'portcullis-auth-server'])) === undefined,
    );
    // The registry Secret is deleted just after the Deployment (one prune, in order).
    await eventually(
      'registry pruned',
      async () =>
        (await kget(env.cluster, ['-n', NS, 'secret', 'portcullis-auth-clients'])) === undefined,
    );
    // The client Secrets stay: their ownerReferences (asserted above) let the garbage collector take them in a real cluster.
  });

  it('no request of the operator was forbidden by the chart RBAC', () => {
    expect(operatorForbidden(env)).toEqual([]);
  });
});
