// Prometheus metrics of the auth server (prom-client), on their own registry, served on a separate
// port (metrics-server.ts) so that the public issuer publishes nothing about its internals. Label
// values come from fixed sets (route templates, grant types, results, store operations), never
// from request data, so the number of series stays bounded whatever clients send.
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const AUTH_METRIC_PREFIX = 'portcullis_auth_';

/** What a password sign-in came to (authenticate.ts): `error` when the throttle's store failed. */
export type SignInOutcome = 'ok' | 'failed' | 'throttled' | 'busy' | 'error';

/** Why client authentication failed: a wrong or missing credential (401), or locked out (429). */
export type ClientAuthFailure = 'rejected' | 'throttled';

/** Route template of requests no route matched (never the raw path: unbounded series). */
export const UNMATCHED_ENDPOINT = 'unmatched';

export class AuthMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'portcullis_auth_requests_total',
    help: 'HTTP requests by endpoint (route template), method and status class (2xx, 3xx, 4xx, 5xx)',
    labelNames: ['endpoint', 'method', 'status_class'] as const,
    registers: [this.registry],
  });
  readonly requestDuration = new Histogram({
    name: 'portcullis_auth_request_duration_seconds',
    help: 'Time from request to response by endpoint (route template), seconds',
    labelNames: ['endpoint'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly tokensIssued = new Counter({
    name: 'portcullis_auth_access_tokens_issued_total',
    help: 'Access tokens issued at the token endpoint by grant type (authorization_token counts as authorization_code)',
    labelNames: ['grant_type'] as const,
    registers: [this.registry],
  });
  readonly signIns = new Counter({
    name: 'portcullis_auth_sign_ins_total',
    help: 'Password sign-ins by result: ok, failed (wrong password or unknown user), throttled (429), busy (password gate full, 503), error (throttle store down)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly clientAuthFailures = new Counter({
    name: 'portcullis_auth_client_auth_failures_total',
    help: 'Failed client authentications at /token, /revoke and /introspect by reason: rejected (401 invalid_client) or throttled (429 after too many wrong secrets)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly storeDuration = new Histogram({
    name: 'portcullis_auth_store_duration_seconds',
    help: 'Time of one store operation (codes, refresh tokens, consents, revocations, sign-in throttle) by store kind and operation, seconds',
    labelNames: ['store', 'operation'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly storeErrors = new Counter({
    name: 'portcullis_auth_store_errors_total',
    help: 'Store operations that failed (Redis down, slow or full) by store kind and operation',
    labelNames: ['store', 'operation'] as const,
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: AUTH_METRIC_PREFIX });
    // Results and reasons that have not happened yet read 0 rather than being absent, so that a
    // rate() over them starts from the first scrape.
    for (const result of ['ok', 'failed', 'throttled', 'busy', 'error'] satisfies SignInOutcome[])
      this.signIns.labels(result);
    for (const reason of ['rejected', 'throttled'] satisfies ClientAuthFailure[])
      this.clientAuthFailures.labels(reason);
    for (const grant of ['authorization_code', 'refresh_token']) this.tokensIssued.labels(grant);
  }

  /** Records one finished request; `endpoint` is the route template or undefined when none matched. */
  request(endpoint: string | undefined, method: string, status: number, seconds: number): void {
    const template = endpoint ?? UNMATCHED_ENDPOINT;
    this.requests.inc({
      endpoint: template,
      method,
      status_class: `${Math.floor(status / 100)}xx`,
    });
    this.requestDuration.observe({ endpoint: template }, seconds);
  }

  /** Records one store operation's duration (s) and whether it failed. */
  storeCall(store: string, operation: string, seconds: number, ok: boolean): void {
    this.storeDuration.observe({ store, operation }, seconds);
    if (!ok) this.storeErrors.inc({ store, operation });
  }
}
