// Per-namespace Redis users on a real redis-server with ACLs: two namespaces (team-a, team-b) share
// one Redis whose admin password only the operator holds. Each namespace's users run everything
// their programs send (the sidecar's bucket script, the auth server's stores and scripts, its
// sign-in throttle), and nothing that reaches the other namespace's keys or the server itself.
import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisBucketStore } from '../../lib/token-bucket/redis-store.ts';
import { tenantUserName, type TenantPurpose } from '../../lib/tenancy/tenant-acl.ts';
import { authKeyPrefix, bucketKeyPrefix } from '../../lib/tenancy/tenant-keys.ts';
import {
  createTenantRedisUsers,
  type TenantRedisUsers,
} from '../../operator/redis/tenant-redis-users.ts';
import { createRedisStores } from '../../services/auth-server/stores/redis.ts';
import { eventually } from '../harness/eventually.ts';
import { startRedis, type RedisServer } from '../harness/redis.ts';
import { takeAll, takeOne } from '../../lib/token-bucket/take-promise.ts';

const ADMIN_PASSWORD = 'admin-Jr5t2Wq8Lx0Pz4Kc';
const rule = { replenishRate: 1, burstCapacity: 5, requestedTokens: 1 };

let server: RedisServer;
let users: TenantRedisUsers;
let admin: Redis;
const clients: Redis[] = [];
const stores: RedisBucketStore[] = [];
/** URL of each namespace's user: `${ns}/${purpose}`. */
const urls = new Map<string, string>();

const client = (url: string) => {
  const c = new Redis(url, {
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  c.on('error', () => {});
  clients.push(c);
  return c;
};
const urlOf = (ns: string, purpose: TenantPurpose) => urls.get(`${ns}/${purpose}`) as string;
const bucketStore = (url: string, keyPrefix: string) => {
  const s = new RedisBucketStore({ url, keyPrefix, commandTimeoutMs: 2000 });
  stores.push(s);
  return s;
};

beforeAll(async () => {
  server = await startRedis(['--requirepass', ADMIN_PASSWORD], { password: ADMIN_PASSWORD });
  admin = client(server.url);
  users = createTenantRedisUsers();
  for (const ns of ['team-a', 'team-b']) {
    for (const purpose of ['bucket', 'auth'] as const)
      urls.set(`${ns}/${purpose}`, (await users.grant(server.url, ns, purpose)) as string);
  }
});

afterAll(async () => {
  for (const s of stores) await s.close().catch(() => {});
  for (const c of clients) c.disconnect();
  await users?.close();
  await server?.stop();
});

describe('per-namespace Redis users', () => {
  it('the URL a namespace gets names its own user and never the admin password', () => {
    const url = new URL(urlOf('team-a', 'bucket'));
    expect(decodeURIComponent(url.username)).toBe(tenantUserName('team-a', 'bucket'));
    expect(urlOf('team-a', 'bucket')).not.toContain(ADMIN_PASSWORD);
    expect(new Set(urls.values()).size).toBe(4);
  });

  it("a namespace's bucket user runs the sidecar's bucket script on its own prefix, also after Redis forgot the script", async () => {
    const store = bucketStore(urlOf('team-a', 'bucket'), bucketKeyPrefix('team-a'));
    await store.ready();
    expect((await takeOne(store, 'api:ann', rule)).allowed).toBe(true);
    expect(
      (await takeAll(store, 'api:search:ann', [rule, { ...rule, burstCapacity: 9 }])).allowed,
    ).toBe(true);
    await admin.script('FLUSH'); // the next call answers NOSCRIPT and goes again as EVAL
    expect((await takeOne(store, 'api:ann', rule)).remaining).toBe(3);
    expect(await admin.exists(`${bucketKeyPrefix('team-a')}v2:{api:ann}`)).toBe(1);
  });

  it("a namespace's auth user runs every auth-server store operation and the sign-in throttle", async () => {
    const prefix = authKeyPrefix('team-a');
    const s = createRedisStores(client(urlOf('team-a', 'auth')), prefix);
    const now = Date.now();
    await s.interactions.put(
      'ix1',
      { kind: 'account', browserHash: 'b', csrf: 'c', expiresAt: now + 60_000 },
      60_000,
    );
    expect(await s.interactions.get('ix1')).toMatchObject({ kind: 'account' });
    expect(await s.interactions.take('ix1')).toMatchObject({ kind: 'account' });
    await s.interactions.delete('ix1');
    const record = {
      clientId: 'app',
      redirectUri: 'https://app.example/cb',
      scope: ['profile'],
      user: 'alice',
      authTime: 1,
      expiresAt: now + 60_000,
    };
    await s.codes.put('h1', record, 60_000);
    expect(await s.codes.peek('h1')).toEqual(record);
    expect(await s.codes.consume('h1', 60_000)).toEqual({ status: 'ok', record });
    expect(await s.codes.attachIssued('h1', { jti: 'j1', accessExpiresAt: 5 })).toBe(false);
    const grant = { user: 'alice', clientId: 'app', scope: ['profile'], authTime: 1 };
    await s.refresh.create('f1', 't1', grant, now, 60_000, now + 600_000);
    expect(await s.refresh.rotate('f1', 't1', 't2', now, 60_000)).toEqual({ status: 'ok', grant });
    await s.refresh.addAccessToken('f1', { jti: 'a1', expiresAt: now + 300_000 });
    expect(await s.refresh.inspect('f1', 't2', now)).toMatchObject({ current: true, active: true });
    expect(await s.refresh.familiesOf('alice', 'app')).toEqual(['f1']);
    expect(await s.refresh.revoke('f1')).toEqual([{ jti: 'a1', expiresAt: now + 300_000 }]);
    await s.revoked.revoke('a1', now + 60_000, now);
    expect(await s.revoked.isRevoked('a1')).toBe(true);
    await s.consents.grant('alice', 'app', ['profile'], now);
    expect([...(await s.consents.list('alice')).keys()]).toEqual(['app']);
    await s.consents.revoke('alice', 'app');
    expect(await s.consents.get('alice', 'app')).toBeUndefined();
    const throttle = bucketStore(urlOf('team-a', 'auth'), `${prefix}signin:`);
    await throttle.ready();
    expect((await takeOne(throttle, 'alice', rule)).allowed).toBe(true);
  });

  describe("one namespace's credentials reach nothing of the other's, nor the server", () => {
    const victim = {
      bucket: `${bucketKeyPrefix('team-b')}v2:{api:ann}`,
      consent: `${authKeyPrefix('team-b')}consent:alice`,
      jti: `${authKeyPrefix('team-b')}jti:a1`,
    };

    beforeAll(async () => {
      await admin.set(victim.bucket, 'state');
      await admin.hset(victim.consent, 'app', '{"scopes":["profile"],"grantedAt":1}');
      await admin.set(victim.jti, '1');
    });

    it.each(['bucket', 'auth'] as const)(
      "the %s user cannot read, write, delete or script the other namespace's keys",
      async (purpose) => {
        const a = client(urlOf('team-a', purpose));
        await expect(a.get(victim.bucket)).rejects.toThrow(/NOPERM/);
        await expect(a.set(victim.bucket, 'full')).rejects.toThrow(/NOPERM/);
        await expect(a.del(victim.jti)).rejects.toThrow(/NOPERM/);
        await expect(a.exists(victim.jti)).rejects.toThrow(/NOPERM/);
        await expect(a.mget(`${bucketKeyPrefix('team-a')}x`, victim.bucket)).rejects.toThrow(
          /NOPERM/,
        );
        // A script can only reach the keys it declares, and those are checked too; undeclared keys
        // are checked when it calls them.
        await expect(a.eval("return redis.call('GET', KEYS[1])", 1, victim.bucket)).rejects.toThrow(
          /NOPERM/,
        );
        await expect(
          a.eval(`return redis.call('SET', '${victim.bucket}', 'x')`, 0),
        ).rejects.toThrow(/can't access at least one of the keys/);
        // The bucket store pointed at the other namespace's prefix: refused, nothing written.
        const aimed = bucketStore(urlOf('team-a', purpose), bucketKeyPrefix('team-b'));
        await expect(takeOne(aimed, 'api:ann', rule)).rejects.toThrow();
        if (purpose === 'auth') {
          await expect(a.hgetall(victim.consent)).rejects.toThrow(/NOPERM/);
          await expect(a.hdel(victim.consent, 'app')).rejects.toThrow(/NOPERM/);
          await expect(a.hset(victim.consent, 'evil', '{}')).rejects.toThrow(/NOPERM/);
        }
        expect(await admin.get(victim.bucket)).toBe('state');
        expect(await admin.hkeys(victim.consent)).toEqual(['app']);
        expect(await admin.exists(victim.jti)).toBe(1);
      },
    );

    it.each(['bucket', 'auth'] as const)(
      'the %s user can list no key names and can neither wipe, reconfigure, watch nor stop the server',
      async (purpose) => {
        const a = client(urlOf('team-a', purpose));
        const refused: Array<[string, ...string[]]> = [
          ['KEYS', '*'],
          ['SCAN', '0'],
          ['FLUSHALL'],
          ['FLUSHDB'],
          ['CONFIG', 'SET', 'maxmemory', '1'],
          ['CONFIG', 'GET', 'requirepass'],
          ['SHUTDOWN', 'NOSAVE'],
          ['ACL', 'LIST'],
          ['ACL', 'SETUSER', 'mine', 'on', 'nopass', '+@all', '~*'],
          ['CLIENT', 'KILL', 'TYPE', 'normal'],
          ['CLIENT', 'LIST'],
          ['MONITOR'],
          ['SWAPDB', '0', '1'],
          ['RANDOMKEY'],
          ['SUBSCRIBE', 'x'],
          ['SCRIPT', 'FLUSH'],
          ['FUNCTION', 'FLUSH'],
          ['REPLICAOF', '127.0.0.1', '1'],
        ];
        for (const [command, ...args] of refused)
          await expect(a.call(command, ...args), command).rejects.toThrow(/NOPERM/);
        // DEBUG is off in this server's configuration whoever asks; the ACL refuses it all the same.
        expect(
          await admin.call(
            'ACL',
            'DRYRUN',
            tenantUserName('team-a', purpose),
            'DEBUG',
            'SLEEP',
            '0',
          ),
        ).toMatch(/no permissions to run the 'debug' command/);
        expect(await admin.dbsize()).toBeGreaterThanOrEqual(3);
        expect(await admin.ping()).toBe('PONG');
      },
    );
  });

  it("revoking a namespace's user closes its connections and its password no longer opens one; the other namespace goes on", async () => {
    const users2 = createTenantRedisUsers();
    const url = (await users2.grant(server.url, 'team-gone', 'bucket')) as string;
    const live = client(url);
    expect(await live.ping()).toBe('PONG');
    await users2.revoke(server.url, 'team-gone', 'bucket');
    await expect(live.ping()).rejects.toThrow();
    await expect(client(url).ping()).rejects.toThrow(/WRONGPASS|NOAUTH|invalid/i);
    expect(await client(urlOf('team-b', 'bucket')).ping()).toBe('PONG');
    await users2.close();
  });

  it('a restarted Redis (nothing persisted) gets the users back from the operator as soon as it reconnects', async () => {
    await server.kill();
    await server.start();
    const pong = await eventually(
      'team-b reconnects',
      () =>
        client(urlOf('team-b', 'auth'))
          .ping()
          .catch(() => undefined),
      10_000,
    );
    expect(pong).toBe('PONG');
  });

  it('a sidecar that reconnects to a restarted, empty Redis before its user is back authenticates again once it is', async () => {
    // Its own server and operator connection, so that no replay can set the user before the store reconnects.
    const lone = await startRedis(['--requirepass', ADMIN_PASSWORD], { password: ADMIN_PASSWORD });
    try {
      const first = createTenantRedisUsers();
      const url = (await first.grant(lone.url, 'team-r', 'bucket')) as string;
      await first.close();
      const store = bucketStore(url, bucketKeyPrefix('team-r'));
      await store.ready();
      expect((await takeOne(store, 'api:ann', rule)).allowed).toBe(true);
      await lone.kill();
      await lone.start();
      // The store's connection comes back to a server without its user: its AUTH fails and takes are refused.
      await eventually(
        'refused while the user is missing',
        () =>
          takeOne(store, 'api:ann', rule).then(
            () => false,
            (err: Error) => err.message.length > 0,
          ),
        10_000,
      );
      const again = createTenantRedisUsers();
      expect(await again.grant(lone.url, 'team-r', 'bucket')).toBe(url);
      // Without reconnecting on NOAUTH the connection would stay unauthenticated for good.
      const decision = await eventually(
        'the store decides again',
        () => takeOne(store, 'api:ann', rule).catch(() => undefined),
        10_000,
      );
      expect(decision.allowed).toBe(true);
      await again.close();
    } finally {
      await lone.stop();
    }
  });

  it('a connection left hanging by a Redis that went away is replaced, and the users are set again on the new server', async () => {
    // A deleted Redis pod leaves the operator's connection open with nothing answering: a TCP relay
    // that goes silent plays that; connections made after it let through to the new server.
    const lone = await startRedis(['--requirepass', ADMIN_PASSWORD], { password: ADMIN_PASSWORD });
    const silenced = new Set<net.Socket>();
    let silent = false;
    const relay = net.createServer((down) => {
      const up = net.connect(lone.port, '127.0.0.1');
      down.on('error', () => {});
      up.on('error', () => {});
      down.on('data', (chunk) => {
        if (!silenced.has(down)) up.write(chunk);
      });
      up.on('data', (chunk) => {
        if (!silenced.has(down)) down.write(chunk);
      });
      down.on('close', () => up.destroy());
    });
    const live = new Set<net.Socket>();
    relay.on('connection', (socket) => {
      live.add(socket);
      socket.on('close', () => live.delete(socket));
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const relayUrl = `redis://:${ADMIN_PASSWORD}@127.0.0.1:${(relay.address() as net.AddressInfo).port}`;
    const operatorUsers = createTenantRedisUsers();
    try {
      const url = (await operatorUsers.grant(relayUrl, 'team-h', 'bucket')) as string;
      silent = true;
      for (const socket of live) silenced.add(socket);
      await lone.kill();
      await lone.start();
      expect(silent).toBe(true);
      // The new server knows no user; the operator's hanging connection is found silent and replaced.
      const user = `redis://${new URL(url).username}:${new URL(url).password}@127.0.0.1:${lone.port}`;
      const pong = await eventually(
        'the user is back on the new server',
        () =>
          client(user)
            .ping()
            .catch(() => undefined),
        15_000,
        500,
      );
      expect(pong).toBe('PONG');
    } finally {
      await operatorUsers.close();
      for (const socket of live) socket.destroy();
      relay.close();
      await lone.stop();
    }
  });

  it('a new admin password rotates every namespace password: the old URL opens nothing', async () => {
    const users2 = createTenantRedisUsers();
    const oldUrl = (await users2.grant(server.url, 'team-rot', 'auth')) as string;
    const rotated = `redis://:${'admin-rotated-9Fq2Lm'}@127.0.0.1:${server.port}`;
    await client(server.url).call('CONFIG', 'SET', 'requirepass', 'admin-rotated-9Fq2Lm');
    const newUrl = (await users2.grant(rotated, 'team-rot', 'auth')) as string;
    expect(newUrl).not.toBe(oldUrl);
    expect(await client(newUrl).ping()).toBe('PONG');
    await expect(client(oldUrl).ping()).rejects.toThrow(/WRONGPASS|invalid/i);
    await users2.close();
  });
});
