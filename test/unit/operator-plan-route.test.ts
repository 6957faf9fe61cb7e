// planRoute: a RateLimitRoute's desired children, the children it no longer wants, its warnings
// and its status, as a pure function of the spec, the settings and what the reconciler observed.
// No API server, no clock: each case is one call.
import { describe, expect, it } from 'vitest';
import { rateLimitRouteSchema } from '../../operator/api/index.ts';
import {
  parseRoute,
  planRoute,
  routeReadyState,
  routeStatusFields,
  type RouteObserved,
  type RoutePlan,
} from '../../operator/controllers/plan-route.ts';
import { EventReasons, Reasons } from '../../operator/controllers/conditions.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { route, routeObject, settings } from './operator-fixtures.ts';

const nothing: RouteObserved = { redisSecretRef: null, authServerRunning: true };
const names = (plan: RoutePlan) =>
  plan.children.map((c) => `${c.object.kind} ${c.object.metadata.name}`);
const staleNames = (plan: RoutePlan) => plan.stale.map((s) => `${s.cache} ${s.name}`);

function planned(...args: Parameters<typeof planRoute>): RoutePlan {
  const plan = planRoute(...args);
  if (!plan.ok) throw new Error(`expected a plan, got: ${plan.problem}`);
  return plan;
}

function refRoute() {
  return rateLimitRouteSchema.parse({
    ...routeObject('all'),
    spec: {
      targetRef: { name: 'web', port: 8081 },
      limiter: { replenishRate: 1, burstCapacity: 10 },
    },
  });
}

function upstreamRoute() {
  return rateLimitRouteSchema.parse({
    ...routeObject('all'),
    spec: {
      upstream: { service: { name: 'user-service', port: 8081 }, replicas: 3 },
      limiter: { replenishRate: 1, burstCapacity: 10 },
    },
  });
}

const teamDeployment: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'team-a', labels: { app: 'web' } },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'app', image: 'example/web:1.0' }] },
    },
  },
};

describe('planRoute: a route with its own target', () => {
  it('renders the ConfigMap first, then the Deployment, the Service, the NetworkPolicy and (two replicas) the budget', () => {
    const plan = planned(route(), settings, nothing);
    expect(names(plan)).toEqual([
      'ConfigMap all-sidecar',
      'Deployment all',
      'Service all',
      'NetworkPolicy all',
      'PodDisruptionBudget all',
    ]);
    expect(plan.children.map((c) => c.cache)).toEqual([
      'configMaps',
      'deployments',
      'services',
      'networkPolicies',
      'podDisruptionBudgets',
    ]);
    // No upstream: its policy is stale; a route with its own Redis URL drops any copy of the default's Secret.
    expect(staleNames(plan)).toEqual(['secrets all-redis', 'networkPolicies all.upstream']);
    expect(plan.configText).toContain('burstCapacity');
    expect(plan.warnings).toEqual([]);
  });

  it('one replica: no budget, and the one it had is stale', () => {
    const one = route('all', {
      target: { image: 'portcullis/user-service:test', port: 8081, replicas: 1 },
    });
    const plan = planned(one, settings, nothing);
    expect(names(plan)).not.toContain('PodDisruptionBudget all');
    expect(staleNames(plan)).toContain('podDisruptionBudgets all');
  });
});

describe('planRoute: network policies on and off', () => {
  it("off: neither the route's nor the upstream's policy is rendered, both are stale", () => {
    const plan = planned(
      upstreamRoute(),
      { ...settings, routeNetworkPolicy: false },
      { ...nothing, upstream: { kind: 'selector', selector: { app: 'user-service' } } },
    );
    expect(plan.children.some((c) => c.object.kind === 'NetworkPolicy')).toBe(false);
    expect(staleNames(plan)).toEqual(
      expect.arrayContaining(['networkPolicies all', 'networkPolicies all.upstream']),
    );
  });

  it("on: an upstream Service with a selector gets its policy, opened to the gateway's pods only", () => {
    const plan = planned(upstreamRoute(), settings, {
      ...nothing,
      upstream: { kind: 'selector', selector: { app: 'user-service' } },
    });
    const policy = plan.children.find((c) => c.object.metadata.name === 'all.upstream')
      ?.object as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered JSON
    expect(policy['spec']['podSelector']).toEqual({ matchLabels: { app: 'user-service' } });
    expect(staleNames(plan)).not.toContain('networkPolicies all.upstream');
  });
});

describe('planRoute: spec.upstream', () => {
  it("renders a gateway Deployment and the route's Service; a Service without a selector keeps the policy it had and warns", () => {
    const message = 'spec.upstream.service user-service has no selector';
    const plan = planned(upstreamRoute(), settings, {
      ...nothing,
      upstream: { kind: 'unprotected', message },
    });
    expect(names(plan)).toEqual([
      'ConfigMap all-sidecar',
      'Deployment all',
      'Service all',
      'NetworkPolicy all',
      'PodDisruptionBudget all',
    ]);
    // Neither rendered nor stale: its pods may still be there.
    expect(staleNames(plan)).not.toContain('networkPolicies all.upstream');
    expect(plan.warnings).toEqual([{ reason: EventReasons.UpstreamUnprotected, message }]);
  });

  it('no warning about an unprotected upstream while NetworkPolicies are off', () => {
    const plan = planned(
      upstreamRoute(),
      { ...settings, routeNetworkPolicy: false },
      { ...nothing, upstream: { kind: 'unprotected', message: 'x' } },
    );
    expect(plan.warnings).toEqual([]);
  });
});

describe('planRoute: spec.targetRef', () => {
  it("renders no Deployment and no budget (the team's pods are theirs): the ConfigMap, a Service onto the team's pods, the policy", () => {
    const plan = planned(refRoute(), settings, { ...nothing, teamDeployment });
    expect(names(plan)).toEqual(['ConfigMap all-sidecar', 'Service all', 'NetworkPolicy all']);
    expect(staleNames(plan)).toContain('podDisruptionBudgets all');
  });

  it("status.selector is the team Deployment's own, the route's gateway labels otherwise", () => {
    expect(routeStatusFields(refRoute(), teamDeployment)).toEqual({
      service: 'all',
      selector: 'app=web',
    });
    expect(routeStatusFields(route(), undefined)).toEqual({
      service: 'all',
      selector: 'app.kubernetes.io/instance=all,app.kubernetes.io/name=portcullis-gateway',
    });
  });
});

describe('planRoute: Redis', () => {
  const secretSettings = {
    ...settings,
    defaultRedisUrl: undefined,
    defaultRedisSecret: { namespace: 'portcullis-system', name: 'creds', key: 'redis-url' },
  };

  it("the default Redis Secret: the namespace user's copy goes first, before the ConfigMap", () => {
    const plan = planned(route(), secretSettings, {
      ...nothing,
      redisUrlData: 'cmVkaXM6Ly91QHJlZGlzOjYzNzk=',
    });
    expect(names(plan).slice(0, 2)).toEqual(['Secret all-redis', 'ConfigMap all-sidecar']);
    expect(staleNames(plan)).not.toContain('secrets all-redis');
  });

  it('the default Secret missing: nothing written, nothing deleted, a warning naming it', () => {
    const plan = planned(route(), secretSettings, nothing);
    expect(plan.children.some((c) => c.object.kind === 'Secret')).toBe(false);
    expect(staleNames(plan)).not.toContain('secrets all-redis');
    expect(plan.warnings.map((w) => w.reason)).toEqual([EventReasons.RedisSecretMissing]);
    expect(plan.warnings[0]?.message).toContain('portcullis-system/creds');
  });

  it('Redis unreachable: the copy left as it is, a RedisUserFailed warning instead', () => {
    const plan = planned(route(), secretSettings, {
      ...nothing,
      redisUserProblem: 'connect ECONNREFUSED',
    });
    expect(staleNames(plan)).not.toContain('secrets all-redis');
    expect(plan.warnings).toEqual([
      {
        reason: EventReasons.RedisUserFailed,
        message: expect.stringContaining('connect ECONNREFUSED'),
      },
    ]);
  });

  it('a plain default URL: the sidecar config names it, no Secret, and a copy left from a Secret setting is stale', () => {
    const plan = planned(route(), settings, nothing);
    expect(plan.configText).toContain('redis://redis:6379');
    expect(plan.children.some((c) => c.object.kind === 'Secret')).toBe(false);
    expect(staleNames(plan)).toContain('secrets all-redis');
  });

  it('no Redis at all: the sidecar keeps its buckets in memory, and no Secret is rendered', () => {
    const plan = planned(route(), { ...settings, defaultRedisUrl: undefined }, nothing);
    expect(plan.configText).not.toContain('redis');
    expect(plan.children.some((c) => c.object.kind === 'Secret')).toBe(false);
  });

  it('spec.redis.secretRef: a missing Secret or key warns; one not read says nothing', () => {
    const own = route('all', { redis: { secretRef: { name: 'mine', key: 'url' } } });
    expect(
      planned(own, secretSettings, { ...nothing, redisSecretRef: undefined }).warnings[0]?.message,
    ).toContain('Secret mine does not exist');
    const noKey: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'mine' },
      data: { other: 'eA==' },
    };
    expect(
      planned(own, secretSettings, { ...nothing, redisSecretRef: noKey }).warnings[0]?.message,
    ).toContain('Secret mine has no key url');
    expect(
      planned(own, secretSettings, {
        ...nothing,
        redisSecretRef: { ...noKey, data: { url: 'eA==' } },
      }).warnings,
    ).toEqual([]);
    expect(planned(own, secretSettings, nothing).warnings).toEqual([]);
  });
});

describe('planRoute: invalid specs become the InvalidSpec problem', () => {
  it('a schema violation, a name that is no Service name, a reserved name', () => {
    expect(parseRoute({ ...routeObject('all'), spec: { path: '/**' } }).problem).toMatch(
      /^spec is invalid: .*; fix the RateLimitRoute$/,
    );
    expect(parseRoute(routeObject('1route')).problem).toMatch(/DNS-1035 label/);
    expect(parseRoute(routeObject('portcullis-auth-server')).problem).toMatch(
      /reserved for the namespace's auth server/,
    );
    expect(parseRoute(routeObject('all')).route?.metadata.name).toBe('all');
  });

  it('sidecar resources the sidecar cannot run with', () => {
    const tiny = route('all', { sidecar: { resources: { limits: { memory: '64Mi' } } } });
    const plan = planRoute(tiny, settings, nothing);
    expect(plan.ok).toBe(false);
    expect(!plan.ok && plan.problem).toMatch(/^spec\.sidecar\.resources: /);
  });
});

describe('planRoute: warnings and the Ready condition', () => {
  it('a jwt key without an issuer warns while the namespace runs no auth server', () => {
    const jwt = route('all', {
      limiter: { replenishRate: 1, burstCapacity: 10, key: { source: 'jwt' } },
    });
    expect(
      planned(jwt, settings, { ...nothing, authServerRunning: false }).warnings.map(
        (w) => w.reason,
      ),
    ).toEqual([EventReasons.AuthServerMissing]);
    expect(planned(jwt, settings, nothing).warnings).toEqual([]);
  });

  it('Ready once the Deployment has its replicas ready, Progressing before', () => {
    const deployment = (ready: number): KubeObject => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'all', namespace: 'team-a', generation: 1 },
      status: {
        observedGeneration: 1,
        replicas: 2,
        updatedReplicas: 2,
        readyReplicas: ready,
        availableReplicas: ready,
      },
    });
    expect(routeReadyState(route(), settings, undefined).state.reason).toBe(Reasons.Progressing);
    expect(routeReadyState(route(), settings, deployment(1)).state.reason).toBe(
      Reasons.Progressing,
    );
    const ready = routeReadyState(route(), settings, deployment(2));
    expect(ready.state).toMatchObject({ status: 'True', reason: Reasons.Ready });
    expect(ready.state.message).toContain(`Service all forwards port ${settings.servicePort}`);
  });
});
