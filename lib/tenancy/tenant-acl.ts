// The Redis ACL users of one namespace (Redis >= 7), one for its sidecars' buckets and one for its
// auth server: each may touch only the keys under its namespace's prefix (tenant-keys.ts) and run
// only the commands its program uses, so a tenant holding its own password can neither read,
// spend nor wipe another namespace's state, nor flush, reconfigure or shut down the server. The
// operator creates the users with the Redis admin credential (which never leaves the release
// namespace) and hands the namespace only URLs naming its users (operator/redis/).
import { createHash, createHmac } from 'node:crypto';
import { authKeyPrefix, assertNamespace, bucketKeyPrefix } from './tenant-keys.ts';

/** What a user's keys hold: a namespace's buckets (sidecars) or its auth server's state. */
export type TenantPurpose = 'bucket' | 'auth';

/**
 * What the programs send, and nothing that lists, wipes or reconfigures the server: no KEYS or
 * SCAN (every tenant's key names), no FLUSH*, CONFIG, MONITOR, SHUTDOWN, ACL, CLIENT KILL, DEBUG.
 * Scripts run under the caller's ACL, so every command a script calls is here too (TIME, MGET).
 * INFO stays allowed: ioredis' ready check and Sentinel role check send it; it shows
 * server-wide counters, never a key name or value.
 */
const CONNECTION_COMMANDS = [
  'auth',
  'hello',
  'ping',
  'echo',
  'select',
  'quit',
  'info',
  'readonly',
  'client|setname',
  'client|getname',
  'client|id',
  'cluster|slots',
  'cluster|shards',
  'cluster|nodes',
];
/** The bucket script (token-bucket.lua) and its loading. */
const BUCKET_COMMANDS = [
  'evalsha',
  'eval',
  'script|load',
  'script|exists',
  'time',
  'get',
  'mget',
  'set',
];
/** The auth server's stores (services/auth-server/stores/redis.ts and its scripts); its sign-in throttle is a bucket store. */
const AUTH_COMMANDS = [
  'getdel',
  'del',
  'exists',
  'pexpire',
  'pttl',
  'hget',
  'hset',
  'hdel',
  'hgetall',
  'hmget',
  'sadd',
  'smembers',
  'multi',
  'exec',
  'discard',
];

export const TENANT_COMMANDS: Readonly<Record<TenantPurpose, readonly string[]>> = {
  bucket: [...CONNECTION_COMMANDS, ...BUCKET_COMMANDS],
  auth: [...CONNECTION_COMMANDS, ...BUCKET_COMMANDS, ...AUTH_COMMANDS],
};

/** The one key prefix a user may touch. */
export function tenantKeyPrefix(namespace: string, purpose: TenantPurpose): string {
  return purpose === 'bucket' ? bucketKeyPrefix(namespace) : authKeyPrefix(namespace);
}

/** The ACL user name of a namespace's sidecars (bucket) or auth server (auth). */
export function tenantUserName(namespace: string, purpose: TenantPurpose): string {
  assertNamespace(namespace);
  return `portcullis-${purpose}-${namespace}`;
}

/**
 * The namespace user's password, derived from the admin credential (HMAC-SHA256): stable across
 * reconciles and operator restarts without storing it anywhere but the namespace's Secret, and
 * rotated for every namespace when the admin password is.
 */
export function tenantPassword(
  adminPassword: string,
  namespace: string,
  purpose: TenantPurpose,
): string {
  assertNamespace(namespace);
  return createHmac('sha256', adminPassword)
    .update(`portcullis redis tenant user\0${purpose}\0${namespace}`)
    .digest('hex');
}

/** ACL SETUSER arguments after the user name: exactly this user, whatever it held before. */
export function tenantAclRules(
  namespace: string,
  purpose: TenantPurpose,
  password: string,
): string[] {
  return [
    'reset',
    'on',
    `#${createHash('sha256').update(password).digest('hex')}`,
    `~${tenantKeyPrefix(namespace, purpose)}*`,
    'resetchannels',
    '-@all',
    ...TENANT_COMMANDS[purpose].map((c) => `+${c}`),
  ];
}

/** The admin URL's password; undefined when it has none (then no user can be held to its keys). */
export function adminPasswordOf(adminUrl: string): string | undefined {
  const password = decodeURIComponent(new URL(adminUrl).password);
  return password === '' ? undefined : password;
}

/** The admin URL with the namespace user's name and password in place of the admin's. */
export function tenantRedisUrl(
  adminUrl: string,
  namespace: string,
  purpose: TenantPurpose,
  password: string,
): string {
  const url = new URL(adminUrl);
  url.username = encodeURIComponent(tenantUserName(namespace, purpose));
  url.password = encodeURIComponent(password);
  return url.toString();
}
