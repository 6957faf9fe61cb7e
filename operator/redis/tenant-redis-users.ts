// The operator's side of per-namespace Redis users (lib/tenancy/tenant-acl.ts): with the admin URL
// from the operator's own Secret it creates or updates a namespace's user (ACL SETUSER, the same
// rules every time, so a reconcile repairs a user changed by hand) and deletes it when the
// namespace's last route, RateLimitPolicy or OAuthClient on it goes (ACL DELUSER, which also closes
// its connections).
// One admin connection per Redis, made on first use and kept; a new admin URL (rotation) replaces it.
// ACL users live in the server's memory only (the bundled Redis keeps no files): whenever the admin
// connection comes back after a loss, the users granted through it are set again at once, so a
// restarted Redis lets the namespaces in within a reconnect rather than at the next resync. A
// connection to a Redis pod that was deleted may hang rather than close (nothing answers at the old
// address), so while it holds users the connection is probed and, silent, replaced.
import { Redis } from 'ioredis';
import {
  adminPasswordOf,
  tenantAclRules,
  tenantPassword,
  tenantRedisUrl,
  tenantUserName,
  type TenantPurpose,
} from '../../lib/tenancy/tenant-acl.ts';

export interface TenantRedisUsers {
  /**
   * Makes sure the namespace's user exists on the Redis `adminUrl` names; returns the URL the
   * namespace gets (its user, its password), or undefined when the admin URL carries no password
   * (a Redis open to anyone: there is nothing to partition, the URL is handed on as it is).
   */
  grant(adminUrl: string, namespace: string, purpose: TenantPurpose): Promise<string | undefined>;
  /** Deletes the namespace's user (no-op when absent). */
  revoke(adminUrl: string, namespace: string, purpose: TenantPurpose): Promise<void>;
  close(): Promise<void>;
}

/** Longest wait for one ACL command, ms: a reconcile fails (and retries) rather than hang. */
const COMMAND_TIMEOUT_MS = 5000;
/** How often a connection holding users is probed, and how long a PING may take before it is replaced (ms). */
const PROBE_EVERY_MS = 2000;
const PROBE_TIMEOUT_MS = 2000;

interface AdminConnection {
  readonly client: Redis;
  /** User name -> its SETUSER rules, as last granted through this connection. */
  readonly granted: Map<string, string[]>;
  readonly probe: NodeJS.Timeout;
}

/** PINGs a ready connection; one silent past PROBE_TIMEOUT_MS is dropped and reconnected (then 'ready' replays). */
function probeConnection(client: Redis, granted: Map<string, string[]>): void {
  if (granted.size === 0 || client.status !== 'ready') return;
  const silent = setTimeout(() => client.disconnect(true), PROBE_TIMEOUT_MS);
  client.ping().then(
    () => clearTimeout(silent),
    () => clearTimeout(silent),
  );
}

export function createTenantRedisUsers(
  onReplayError: (err: Error) => void = () => {},
): TenantRedisUsers {
  const admins = new Map<string, AdminConnection>();

  /** The admin connection of one Redis (keyed by host, port and db): replaced when its URL changes. */
  function admin(adminUrl: string): AdminConnection {
    const u = new URL(adminUrl);
    const where = `${u.protocol}//${u.host}${u.pathname}`;
    const known = admins.get(where);
    const { options } = known?.client ?? {};
    if (
      known !== undefined &&
      options?.password === decodeURIComponent(u.password) &&
      (options.username ?? '') === decodeURIComponent(u.username)
    )
      return known;
    if (known !== undefined) {
      clearInterval(known.probe);
      known.client.disconnect();
    }
    const client = new Redis(adminUrl, {
      commandTimeout: COMMAND_TIMEOUT_MS,
      maxRetriesPerRequest: 1,
      connectionName: 'portcullis-operator',
    });
    const granted = new Map<string, string[]>();
    const probe = setInterval(() => probeConnection(client, granted), PROBE_EVERY_MS);
    probe.unref();
    const connection: AdminConnection = { client, granted, probe };
    // Failures surface as rejected commands (the reconcile retries); no unhandled 'error' events.
    client.on('error', () => {});
    client.on('ready', () => {
      for (const [user, rules] of connection.granted)
        client.call('ACL', 'SETUSER', user, ...rules).catch(onReplayError);
    });
    admins.set(where, connection);
    return connection;
  }

  return {
    async grant(adminUrl, namespace, purpose) {
      const adminPassword = adminPasswordOf(adminUrl);
      if (adminPassword === undefined) return undefined;
      const password = tenantPassword(adminPassword, namespace, purpose);
      const user = tenantUserName(namespace, purpose);
      const rules = tenantAclRules(namespace, purpose, password);
      const connection = admin(adminUrl);
      await connection.client.call('ACL', 'SETUSER', user, ...rules);
      connection.granted.set(user, rules);
      return tenantRedisUrl(adminUrl, namespace, purpose, password);
    },
    async revoke(adminUrl, namespace, purpose) {
      if (adminPasswordOf(adminUrl) === undefined) return;
      const user = tenantUserName(namespace, purpose);
      const connection = admin(adminUrl);
      connection.granted.delete(user);
      await connection.client.call('ACL', 'DELUSER', user);
    },
    async close() {
      for (const { client, probe } of admins.values()) {
        clearInterval(probe);
        client.disconnect();
      }
      admins.clear();
    },
  };
}

/**
 * What goes into a namespace's Redis Secret, base64 as Secret data: the URL of the namespace's own
 * user, made sure of first; without `users` (tenant users turned off) or an admin password, the
 * operator's URL as it is.
 */
export async function namespaceRedisUrlData(
  users: TenantRedisUsers | undefined,
  adminUrlBase64: string,
  namespace: string,
  purpose: TenantPurpose,
): Promise<string> {
  if (users === undefined) return adminUrlBase64;
  const own = await users.grant(
    Buffer.from(adminUrlBase64, 'base64').toString('utf8'),
    namespace,
    purpose,
  );
  return own === undefined ? adminUrlBase64 : Buffer.from(own, 'utf8').toString('base64');
}

/** Deletes the namespace's user of the Redis the (base64) admin URL names. */
export async function releaseNamespaceRedisUser(
  users: TenantRedisUsers | undefined,
  adminUrlBase64: string,
  namespace: string,
  purpose: TenantPurpose,
): Promise<void> {
  if (users !== undefined)
    await users.revoke(Buffer.from(adminUrlBase64, 'base64').toString('utf8'), namespace, purpose);
}
