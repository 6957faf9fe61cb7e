import { afterEach, describe, expect, it } from 'vitest';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import { AuthServerReconciler } from '../../operator/controllers/auth-server-reconciler.ts';
import { OAuthClientReconciler } from '../../operator/controllers/oauth-client-reconciler.ts';
import { registeredClientIds } from '../../operator/resources/auth/client-registry-secret.ts';
import {
  credentialsOf,
  ROTATE_SECRET_ANNOTATION,
} from '../../operator/resources/auth/oauth-client-secret.ts';
import { signingKeysStateOf } from '../../operator/resources/auth/signing-keys-secret.ts';
import { Applier } from '../../operator/runtime/applier.ts';
import { asRecord } from '../../operator/runtime/kube-object.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { ManualClock, flush } from '../harness/manual-clock.ts';
import {
  clientObject,
  recordingEvents,
  settings,
  silent,
  startCaches,
} from './operator-fixtures.ts';

const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** One "operator process": its own caches and reconcilers over the shared API (restart = call again). */
async function operatorProcess(client: MemoryKubeClient, clock: ManualClock) {
  const caches = await startCaches(client, clock);
  stops.push(caches.stop);
  const applier = new Applier(client);
  const clients = new OAuthClientReconciler({
    client,
    applier,
    caches,
    clock,
    events: recordingEvents(),
    log: silent,
  });
  const authServer = new AuthServerReconciler({
    client,
    applier,
    caches,
    settings: { ...settings, signingKeyRotationMs: 3600_000 },
    clock,
    log: silent,
  });
  return {
    caches,
    /** Reconciles the client, the namespace, the client again (status after registration). */
    async settle(name = 'demo-app') {
      for (const step of [
        () => clients.reconcile(`team-a/${name}`),
        () => authServer.reconcile('team-a'),
        () => clients.reconcile(`team-a/${name}`),
      ]) {
        await flush();
        await step();
      }
      await flush();
    },
    authServer,
    stop: caches.stop,
  };
}

function secretOf(client: MemoryKubeClient, name = 'demo-app') {
  return credentialsOf(client.peek(resourceTypes.secret, 'team-a', `${name}-oauth-client`));
}

function registry(client: MemoryKubeClient) {
  return registeredClientIds(
    client.peek(resourceTypes.secret, 'team-a', 'portcullis-auth-clients'),
  );
}

describe('OAuthClient and auth-server reconcilers', () => {
  it('generates the client Secret once, registers its hash, and reports clientId/secretName/Ready', async () => {
    const client = new MemoryKubeClient();
    const op = await operatorProcess(client, new ManualClock());
    client.put(clientObject());
    await op.settle();
    const creds = secretOf(client);
    expect(creds).toMatchObject({ clientId: expect.any(String), clientSecret: expect.any(String) });
    expect(registry(client).get(creds?.clientId ?? '')).toBe(
      hashClientSecret(creds?.clientSecret ?? ''),
    );
    const status = asRecord(
      client.peek(resourceTypes.oauthClient, 'team-a', 'demo-app')?.['status'],
    );
    expect(status).toMatchObject({
      clientId: creds?.clientId,
      secretName: 'demo-app-oauth-client',
      observedGeneration: 1,
    });
    expect(status?.['conditions']).toEqual([
      expect.objectContaining({ type: 'Ready', status: 'True', reason: 'Registered' }),
    ]);
    expect(
      client
        .writes('Secret')
        .filter((w) => w.verb === 'create')
        .map((w) => w.name),
    ).toEqual(['demo-app-oauth-client', 'portcullis-auth-signing-keys']);
  });

  it('an operator restart keeps the secret and the signing keys, and a settled state writes nothing', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const first = await operatorProcess(client, clock);
    client.put(clientObject());
    await first.settle();
    const creds = secretOf(client);
    const keys = signingKeysStateOf(
      client.peek(resourceTypes.secret, 'team-a', 'portcullis-auth-signing-keys'),
    );
    await first.stop();
    const writes = client.writes().length;
    const second = await operatorProcess(client, clock);
    await second.settle();
    expect(secretOf(client)).toEqual(creds);
    expect(
      signingKeysStateOf(
        client.peek(resourceTypes.secret, 'team-a', 'portcullis-auth-signing-keys'),
      ),
    ).toEqual(keys);
    expect(client.writes().slice(writes)).toEqual([]);
  });

  it('never regenerates a secret its cache has not seen yet (live read first)', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const op = await operatorProcess(client, clock);
    client.put(clientObject());
    await op.settle();
    const creds = secretOf(client);
    // A process whose Secret cache is behind (here: a cache of an empty API) must read the live Secret.
    const empty = await startCaches(new MemoryKubeClient(), clock);
    stops.push(empty.stop);
    const applier = new Applier(client);
    const behind = new OAuthClientReconciler({
      client,
      applier,
      caches: { clients: op.caches.clients, secrets: empty.secrets },
      clock,
      events: recordingEvents(),
      log: silent,
    });
    const auth = new AuthServerReconciler({
      client,
      applier,
      caches: { ...op.caches, secrets: empty.secrets },
      settings,
      clock,
      log: silent,
    });
    const keys = signingKeysStateOf(
      client.peek(resourceTypes.secret, 'team-a', 'portcullis-auth-signing-keys'),
    );
    await behind.reconcile('team-a/demo-app');
    await auth.reconcile('team-a');
    expect(secretOf(client)).toEqual(creds);
    expect(
      signingKeysStateOf(
        client.peek(resourceTypes.secret, 'team-a', 'portcullis-auth-signing-keys'),
      ),
    ).toEqual(keys);
    expect(client.writes().filter((w) => w.verb === 'create' && w.kind === 'Secret')).toHaveLength(
      2,
    ); // the first process's only
  });

  it('the auth-server Deployment and Service exist and reference the registry, users and keys Secrets', async () => {
    const client = new MemoryKubeClient();
    const op = await operatorProcess(client, new ManualClock());
    client.put(clientObject());
    await op.settle();
    const dep = client.peek(
      resourceTypes.deployment,
      'team-a',
      'portcullis-auth-server',
    ) as unknown as {
      spec: { template: { spec: { volumes: Array<{ secret?: { secretName: string } }> } } };
    };
    expect(
      dep.spec.template.spec.volumes.flatMap((v) => (v.secret ? [v.secret.secretName] : [])),
    ).toEqual(['portcullis-auth-clients', 'portcullis-auth-users', 'portcullis-auth-signing-keys']);
    expect(client.peek(resourceTypes.service, 'team-a', 'portcullis-auth-server')).toBeDefined();
  });

  it('deleting an OAuthClient drops it from the registry; deleting the last removes the auth server', async () => {
    const client = new MemoryKubeClient();
    const op = await operatorProcess(client, new ManualClock());
    client.put(clientObject('one'));
    client.put(clientObject('two'));
    await op.settle('one');
    await op.settle('two');
    const one = secretOf(client, 'one');
    const two = secretOf(client, 'two');
    expect([...registry(client).keys()].sort()).toEqual([one?.clientId, two?.clientId].sort());
    client.remove(resourceTypes.oauthClient, 'team-a', 'one');
    await flush();
    await op.authServer.reconcile('team-a');
    expect([...registry(client).keys()]).toEqual([two?.clientId]);
    client.remove(resourceTypes.oauthClient, 'team-a', 'two');
    await flush();
    await op.authServer.reconcile('team-a');
    expect(client.peek(resourceTypes.secret, 'team-a', 'portcullis-auth-clients')).toBeUndefined();
    expect(
      client.peek(resourceTypes.deployment, 'team-a', 'portcullis-auth-server'),
    ).toBeUndefined();
  });

  it('a rotation request makes a new secret for the same client id, once', async () => {
    const client = new MemoryKubeClient();
    const op = await operatorProcess(client, new ManualClock());
    client.put(clientObject());
    await op.settle();
    const before = secretOf(client);
    const obj = clientObject();
    obj.metadata.annotations = { [ROTATE_SECRET_ANNOTATION]: '2026-01-02' };
    client.put(obj);
    await op.settle();
    const after = secretOf(client);
    expect(after?.clientId).toBe(before?.clientId);
    expect(after?.clientSecret).not.toBe(before?.clientSecret);
    await op.settle();
    expect(secretOf(client)).toEqual(after);
    expect(registry(client).get(after?.clientId ?? '')).toBe(
      hashClientSecret(after?.clientSecret ?? ''),
    );
  });

  it('rotates the signing key on time and asks to be called back', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const op = await operatorProcess(client, clock);
    client.put(clientObject());
    await op.settle();
    const keysOf = () =>
      signingKeysStateOf(
        client.peek(resourceTypes.secret, 'team-a', 'portcullis-auth-signing-keys'),
      )?.file.keys.map((k) => k.kid) ?? [];
    const [kid1] = keysOf();
    await clock.advance(3600_000);
    const result = await op.authServer.reconcile('team-a');
    expect(keysOf()).toHaveLength(2);
    expect(keysOf()[1]).toBe(kid1);
    expect(result.requeueAfterMs).toBe(360_000); // the old key is dropped after TTL + 60 s
    await clock.advance(360_000);
    await flush();
    await op.authServer.reconcile('team-a');
    expect(keysOf()).toHaveLength(1);
    expect(keysOf()[0]).not.toBe(kid1);
  });

  it('warns on the OAuthClients when the users Secret is missing, and stops once it exists', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const caches = await startCaches(client, clock);
    stops.push(caches.stop);
    const events = recordingEvents();
    const auth = new AuthServerReconciler({
      client,
      applier: new Applier(client),
      caches,
      settings,
      clock,
      events,
      log: silent,
    });
    client.put(clientObject());
    await flush();
    await auth.reconcile('team-a');
    expect(events.list).toEqual([
      expect.objectContaining({
        name: 'demo-app',
        type: 'Warning',
        reason: 'UsersSecretMissing',
        message: expect.stringMatching(/portcullis-auth-users does not exist/),
      }),
    ]);
    client.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'portcullis-auth-users', namespace: 'team-a' },
      data: { 'users.json': 'e30=' },
    });
    await auth.reconcile('team-a');
    expect(events.list).toHaveLength(1);
  });

  it('a Secret of that name owned by something else is a SecretConflict, and is left alone', async () => {
    const client = new MemoryKubeClient();
    const op = await operatorProcess(client, new ManualClock());
    client.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'demo-app-oauth-client',
        namespace: 'team-a',
        labels: { 'app.kubernetes.io/managed-by': 'portcullis-operator' },
      },
      data: { x: 'eA==' },
    });
    client.put(clientObject());
    await op.settle();
    const status = asRecord(
      client.peek(resourceTypes.oauthClient, 'team-a', 'demo-app')?.['status'],
    );
    expect(status?.['conditions']).toEqual([
      expect.objectContaining({ status: 'False', reason: 'SecretConflict' }),
    ]);
    expect(client.peek(resourceTypes.secret, 'team-a', 'demo-app-oauth-client')?.['data']).toEqual({
      x: 'eA==',
    });
  });
});
