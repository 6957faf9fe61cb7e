// The Portcullis API (group portcullis.dev, version v1alpha1): re-exports only.
export * from './common.ts';
export * from './limiter.ts';
export * from './redis-url.ts';
export * from './container.ts';
export * from './route-workload.ts';
export * from './rate-limit-route.ts';
export * from './oauth-client.ts';
export * from './rate-limit-policy.ts';

import { rateLimitRouteCrd } from './rate-limit-route.ts';
import { oauthClientCrd } from './oauth-client.ts';
import { rateLimitPolicyCrd } from './rate-limit-policy.ts';
import type { CrdSource } from './common.ts';

/** Every kind, in the order crds/ lists them. */
export const crdSources: readonly CrdSource[] = [
  rateLimitRouteCrd,
  oauthClientCrd,
  rateLimitPolicyCrd,
];
