// Operator settings: environment variables (what the chart sets, charts/portcullis/templates/
// deployment.yaml) or the same names as flags (`--watch-namespaces a,b` = PORTCULLIS_WATCH_NAMESPACES;
// `--port 8081` = PORT). Parsed once at start with zod; a bad value names its variable. What the
// operator's parts take from the parsed settings is in config-settings.ts.
import { z } from 'zod';
import { dnsSubdomain } from './api/index.ts';
import {
  boolish,
  ms,
  optionalString,
  port,
  redisUrl,
  resourcesJson,
  secretKey,
} from './config-fields.ts';
import { DEFAULT_AUTH_SERVER_RESOURCES } from './resources/shared/container-resources.ts';
import {
  DEFAULT_SIDECAR_RESOURCES,
  sidecarMemoryProblem,
} from './resources/shared/sidecar-heap.ts';

export const operatorConfigSchema = z
  .object({
    PORT: port(8081).describe('Port of /metrics, /healthz and /readyz'),
    HOST: z.string().min(1).default('0.0.0.0'),
    LOG_LEVEL: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info'),
    KUBECONFIG: optionalString.describe(
      'kubeconfig file; unset: in-cluster service account, then ~/.kube/config',
    ),
    POD_NAME: optionalString.describe(
      'Leader-election identity (downward API); unset: host name + pid',
    ),
    POD_NAMESPACE: optionalString,
    PORTCULLIS_WATCH_NAMESPACES: z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== ''),
      )
      .describe('Comma-separated namespaces to watch; empty: all'),
    PORTCULLIS_LEADER_ELECTION: boolish.default(true),
    PORTCULLIS_LEADER_ELECTION_NAMESPACE: optionalString.describe(
      'Namespace of the Lease; default POD_NAMESPACE, then "default"',
    ),
    PORTCULLIS_LEASE_NAME: z.string().min(1).default('portcullis-operator'),
    PORTCULLIS_LEASE_DURATION_MS: ms(15_000).describe(
      'A standby takes over this long after the leader stopped renewing (ms)',
    ),
    PORTCULLIS_RENEW_DEADLINE_MS: ms(10_000).describe(
      'The leader gives up when it could not renew for this long (ms)',
    ),
    PORTCULLIS_RETRY_PERIOD_MS: ms(2_000).describe('Pause between lease attempts (ms)'),
    PORTCULLIS_RESYNC_INTERVAL_MS: ms(10 * 60_000).describe(
      'Every object is reconciled at least this often (ms; 0 = only on change)',
    ),
    PORTCULLIS_RELIST_INTERVAL_MS: ms(30 * 60_000).describe(
      'Informers relist at least this often (ms)',
    ),
    PORTCULLIS_KUBE_QPS: z.coerce
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(20)
      .describe(
        "Requests per second to the API server over time (client-side, like client-go's QPS; the leader lease is not counted)",
      ),
    PORTCULLIS_KUBE_BURST: z.coerce
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(40)
      .describe('Requests that may go at once above PORTCULLIS_KUBE_QPS after a quiet spell'),
    PORTCULLIS_WORKERS: z.coerce
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .describe('Concurrent reconciles per controller'),
    PORTCULLIS_SIDECAR_IMAGE: z.string().min(1).default('portcullis/sidecar:latest'),
    PORTCULLIS_AUTH_SERVER_IMAGE: z.string().min(1).default('portcullis/auth-server:latest'),
    PORTCULLIS_IMAGE_PULL_POLICY: z
      .enum(['Always', 'IfNotPresent', 'Never'])
      .default('IfNotPresent'),
    PORTCULLIS_DEFAULT_REDIS_URL: redisUrl('PORTCULLIS_DEFAULT_REDIS_SECRET').describe(
      'Redis of RateLimitRoutes that name none (and of the auth server unless PORTCULLIS_AUTH_REDIS_URL is set); unset: in memory',
    ),
    PORTCULLIS_AUTH_REDIS_URL: redisUrl('PORTCULLIS_AUTH_REDIS_SECRET').describe(
      "Redis of the auth servers' security state (throttles, revocations, codes, refresh tokens); it must never evict. Unset: PORTCULLIS_DEFAULT_REDIS_URL",
    ),
    PORTCULLIS_DEFAULT_REDIS_SECRET: secretKey.describe(
      "Instead of PORTCULLIS_DEFAULT_REDIS_URL: name/key of the Secret (in the operator's namespace) holding the URL; copied beside each route that needs it",
    ),
    PORTCULLIS_AUTH_REDIS_SECRET: secretKey.describe(
      'Instead of PORTCULLIS_AUTH_REDIS_URL: name/key of the Secret holding the URL; copied beside each auth server',
    ),
    PORTCULLIS_REDIS_TENANT_USERS: boolish
      .default(true)
      .describe(
        "With the *_REDIS_SECRET settings: each namespace gets its own Redis ACL user (Redis >= 7), held to its namespace's keys, and only that user's URL; the Secret's URL is the admin credential and never leaves the operator's namespace. false: the URL is copied as it is (one trusted team only)",
      ),
    PORTCULLIS_ISSUER_URL: z
      .string()
      .min(1)
      .default('http://portcullis-auth-server.{namespace}.svc')
      .describe('{namespace} is replaced'),
    PORTCULLIS_USERS_SECRET: z.string().min(1).default('portcullis-auth-users'),
    PORTCULLIS_USERS_SECRET_KEY: z.string().min(1).default('users.json'),
    PORTCULLIS_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(10).max(86_400).default(300),
    PORTCULLIS_REFRESH_REUSE_GRACE_SECONDS: z.coerce
      .number()
      .int()
      .min(0)
      .max(60)
      .default(3)
      .describe("The auth servers' refresh-token reuse grace window (s); 0: strict"),
    PORTCULLIS_SIGN_IN_SESSIONS: boolish
      .default(false)
      .describe("The auth servers' sign-in sessions across clients"),
    PORTCULLIS_SESSION_IDLE_SECONDS: z.coerce
      .number()
      .int()
      .min(60)
      .max(7 * 86_400)
      .default(1800),
    PORTCULLIS_SESSION_MAX_AGE_SECONDS: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(43_200),
    PORTCULLIS_SIGNING_KEY_ROTATION_HOURS: z.coerce
      .number()
      .min(0)
      .max(24 * 365)
      .default(720)
      .describe('0: never rotate on a timer'),
    PORTCULLIS_SIDECAR_PORT: port(8080),
    PORTCULLIS_SIDECAR_ADMIN_PORT: port(9090),
    PORTCULLIS_SERVICE_PORT: port(80),
    PORTCULLIS_AUTH_SERVER_PORT: port(9000),
    PORTCULLIS_AUTH_SERVER_REPLICAS: z.coerce
      .number()
      .int()
      .min(1)
      .max(20)
      .default(2)
      .describe('With Redis; without, always 1'),
    PORTCULLIS_SHUTDOWN_GRACE_MS: ms(20_000).describe(
      'Longest wait for reconciles in flight on SIGTERM (ms)',
    ),
    PORTCULLIS_ROUTE_NETWORK_POLICY: boolish
      .default(true)
      .describe(
        "A NetworkPolicy per route admitting only the sidecar's ports (needs a CNI that enforces policies)",
      ),
    PORTCULLIS_JWKS_ALLOWED_HOSTS: z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== ''),
      )
      .describe(
        "Comma-separated host names a route's own jwt issuer may publish its keys at; empty: any",
      ),
    PORTCULLIS_PRIORITY_CLASS_NAME: optionalString
      .refine(
        (v) => v === undefined || dnsSubdomain.safeParse(v).success,
        'a PriorityClass name (DNS-1123 subdomain)',
      )
      .describe(
        "PriorityClass of route and auth-server pods (a route's spec.priorityClassName wins); empty: none",
      ),
    PORTCULLIS_SIDECAR_RESOURCES: resourcesJson(
      DEFAULT_SIDECAR_RESOURCES,
      sidecarMemoryProblem,
    ).describe(
      "The sidecar container's resources as JSON, unless a route sets spec.sidecar.resources; its old space is capped at half limits.memory",
    ),
    PORTCULLIS_AUTH_SERVER_RESOURCES: resourcesJson(DEFAULT_AUTH_SERVER_RESOURCES).describe(
      "The auth-server container's resources as JSON",
    ),
  })
  .refine((c) => c.PORTCULLIS_RENEW_DEADLINE_MS < c.PORTCULLIS_LEASE_DURATION_MS, {
    message: 'PORTCULLIS_RENEW_DEADLINE_MS must be shorter than PORTCULLIS_LEASE_DURATION_MS',
    path: ['PORTCULLIS_RENEW_DEADLINE_MS'],
  })
  .refine(
    (c) =>
      c.PORTCULLIS_DEFAULT_REDIS_URL === undefined ||
      c.PORTCULLIS_DEFAULT_REDIS_SECRET === undefined,
    {
      message: 'set PORTCULLIS_DEFAULT_REDIS_URL or PORTCULLIS_DEFAULT_REDIS_SECRET, not both',
      path: ['PORTCULLIS_DEFAULT_REDIS_SECRET'],
    },
  )
  .refine(
    (c) =>
      c.PORTCULLIS_AUTH_REDIS_URL === undefined || c.PORTCULLIS_AUTH_REDIS_SECRET === undefined,
    {
      message: 'set PORTCULLIS_AUTH_REDIS_URL or PORTCULLIS_AUTH_REDIS_SECRET, not both',
      path: ['PORTCULLIS_AUTH_REDIS_SECRET'],
    },
  );

export type OperatorConfig = z.infer<typeof operatorConfigSchema>;

const UNPREFIXED = new Set([
  'PORT',
  'HOST',
  'LOG_LEVEL',
  'KUBECONFIG',
  'POD_NAME',
  'POD_NAMESPACE',
]);
const KEYS = new Set(Object.keys(operatorConfigSchema.shape));

/** `--watch-namespaces` -> PORTCULLIS_WATCH_NAMESPACES, `--port` -> PORT. */
export function flagToEnvName(flag: string): string {
  const upper = flag.replace(/^--/, '').toUpperCase().replaceAll('-', '_');
  return UNPREFIXED.has(upper) ? upper : `PORTCULLIS_${upper}`;
}

/** Flags as env entries; throws on an unknown flag or one without a value. */
export function parseFlags(argv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('--'))
      throw new Error(`unexpected argument "${arg}" (flags are --name value or --name=value)`);
    const eq = arg.indexOf('=');
    const flag = eq < 0 ? arg : arg.slice(0, eq);
    const name = flagToEnvName(flag);
    if (!KEYS.has(name)) throw new Error(`unknown flag ${flag}`);
    let value: string | undefined;
    if (eq >= 0) value = arg.slice(eq + 1);
    else {
      value = argv[i + 1];
      i++;
    }
    if (value === undefined) throw new Error(`flag ${flag} needs a value`);
    out[name] = value;
  }
  return out;
}

/** Env overlaid with flags (flags win), parsed; throws an Error naming each invalid setting. */
export function loadOperatorConfig(
  env: Record<string, string | undefined>,
  argv: readonly string[] = [],
): OperatorConfig {
  const input: Record<string, string | undefined> = {};
  for (const key of KEYS) if (env[key] !== undefined) input[key] = env[key];
  Object.assign(input, parseFlags(argv));
  const result = operatorConfigSchema.safeParse(input);
  if (!result.success) {
    const detail = result.error.issues
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new Error(`invalid operator configuration: ${detail}`);
  }
  return result.data;
}
