// The pure plan of a RateLimitPolicy: which objects, which HTTPRoute edits, which ancestor status,
// from what was observed. No API server: planPolicy does no I/O.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { rateLimitPolicySchema, type RateLimitPolicy } from '../../operator/api/index.ts';
import { parseSidecarConfig } from '../../lib/config/sidecar.ts';
import {
  crdHasExternalAuth,
  externalAuthFilter,
  routeWithFilters,
} from '../../operator/policies/external-auth-filter.ts';
import { planPolicy, type PolicyObserved } from '../../operator/policies/plan-policy.ts';
import { ancestorStatuses, PolicyReasons } from '../../operator/policies/policy-status.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { settings } from './operator-fixtures.ts';

function policy(
  name: string,
  targetRefs: unknown[],
  created = '2026-01-01T00:00:00Z',
): RateLimitPolicy {
  return rateLimitPolicySchema.parse({
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitPolicy',
    metadata: {
      name,
      namespace: 'team-a',
      uid: `uid-${name}`,
      generation: 3,
      creationTimestamp: created,
    },
    spec: { targetRefs, limiter: { replenishRate: 1, burstCapacity: 10 } },
  });
}

const ref = (name: string, sectionName?: string, kind = 'HTTPRoute') => ({
  group: 'gateway.networking.k8s.io',
  kind,
  name,
  ...(sectionName === undefined ? {} : { sectionName }),
});

function httpRoute(
  name: string,
  rules: Array<Record<string, unknown>> = [{ name: 'api' }, { name: 'web' }],
  parents: unknown[] = [{ name: 'public' }],
): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: 'team-a', resourceVersion: '7' },
    spec: { parentRefs: parents, rules },
  };
}

const observed = (o: Partial<PolicyObserved> = {}): PolicyObserved => ({
  routes: [httpRoute('shop')],
  gateways: [],
  peers: [],
  externalAuth: true,
  ...o,
});
const filtersOf = (route: KubeObject | undefined, rule: number): unknown[] =>
  (route?.['spec'] as { rules: Array<{ filters?: unknown[] }> }).rules[rule]?.filters ?? [];

describe('planPolicy', () => {
  it('renders the decision service and wires every rule of a targeted route, with the parent Gateway as ancestor', () => {
    const p = policy('orders', [ref('shop')]);
    const plan = planPolicy(p, settings, observed());
    expect(plan.objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'ConfigMap/orders-decision-sidecar',
      'Deployment/orders-decision',
      'Service/orders-decision',
      'NetworkPolicy/orders-decision',
      'PodDisruptionBudget/orders-decision',
    ]);
    for (const o of plan.objects)
      expect(o.metadata.ownerReferences).toEqual([
        expect.objectContaining({
          kind: 'RateLimitPolicy',
          name: 'orders',
          uid: 'uid-orders',
          controller: true,
        }),
      ]);
    const config = parseSidecarConfig(
      parse((plan.objects[0]?.['data'] as Record<string, string>)['config.yaml'] ?? ''),
    );
    expect(config.mode).toBe('decision');
    expect(config.upstream).toBeUndefined();
    expect(config.decision.grpc?.port).toBe(9191);
    expect(config.redis?.keyPrefix).toBe('portcullis:bucket:team-a:');
    expect(plan.routeUpdates).toHaveLength(1);
    const wanted = externalAuthFilter({ service: 'orders-decision', port: 9191 });
    expect(filtersOf(plan.routeUpdates[0], 0)).toEqual([wanted]);
    expect(filtersOf(plan.routeUpdates[0], 1)).toEqual([wanted]);
    expect(plan.ancestors).toEqual([
      {
        ancestorRef: {
          group: 'gateway.networking.k8s.io',
          kind: 'Gateway',
          namespace: 'team-a',
          name: 'public',
        },
        accepted: expect.objectContaining({ status: 'True', reason: PolicyReasons.Accepted }),
        wired: expect.objectContaining({
          status: 'True',
          reason: PolicyReasons.ExternalAuthFilter,
        }),
      },
    ]);
  });

  it('wires only the rule sectionName names, and keeps the team filters in their order', () => {
    const team = {
      type: 'RequestHeaderModifier',
      requestHeaderModifier: { set: [{ name: 'x', value: '1' }] },
    };
    const routes = [httpRoute('shop', [{ name: 'api', filters: [team] }, { name: 'web' }])];
    const plan = planPolicy(policy('orders', [ref('shop', 'api')]), settings, observed({ routes }));
    expect(filtersOf(plan.routeUpdates[0], 0)).toEqual([
      team,
      externalAuthFilter({ service: 'orders-decision', port: 9191 }),
    ]);
    expect(filtersOf(plan.routeUpdates[0], 1)).toEqual([]);
  });

  it('writes nothing to a route that already carries the filter where wanted', () => {
    const first = planPolicy(policy('orders', [ref('shop')]), settings, observed());
    const again = planPolicy(
      policy('orders', [ref('shop')]),
      settings,
      observed({ routes: first.routeUpdates }),
    );
    expect(again.routeUpdates).toEqual([]);
  });

  it('takes the filter off a route the policy no longer targets, leaving other filters', () => {
    const wired = planPolicy(policy('orders', [ref('shop')]), settings, observed()).routeUpdates;
    const other = httpRoute('cart');
    const plan = planPolicy(
      policy('orders', [ref('cart')]),
      settings,
      observed({ routes: [...wired, other] }),
    );
    const shop = plan.routeUpdates.find((r) => r.metadata.name === 'shop');
    expect(filtersOf(shop, 0)).toEqual([]);
    expect(shop?.metadata.resourceVersion).toBe('7');
  });

  it('a missing route or rule is TargetNotFound with the target itself as ancestor, and nothing is wired', () => {
    const plan = planPolicy(
      policy('orders', [ref('gone'), ref('shop', 'admin')]),
      settings,
      observed(),
    );
    expect(plan.routeUpdates).toEqual([]);
    expect(
      plan.ancestors.map((a) => [a.ancestorRef.kind, a.ancestorRef.name, a.accepted.reason]),
    ).toEqual([
      ['HTTPRoute', 'gone', 'TargetNotFound'],
      ['Gateway', 'public', 'TargetNotFound'],
    ]);
    expect(plan.ancestors[1]?.accepted.message).toContain('no rule named admin');
  });

  it('without Gateway API installed every target is TargetNotFound, saying why', () => {
    const plan = planPolicy(
      policy('orders', [ref('shop')]),
      settings,
      observed({ routes: undefined, externalAuth: false }),
    );
    expect(plan.ancestors[0]?.accepted).toMatchObject({
      status: 'False',
      reason: 'TargetNotFound',
    });
    expect(plan.ancestors[0]?.accepted.message).toContain('not installed');
  });

  it('the newer of two policies on one route is Conflicted and does not wire; the older wins', () => {
    const older = policy('first', [ref('shop')], '2026-01-01T00:00:00Z');
    const newer = policy('second', [ref('shop', 'api')], '2026-01-02T00:00:00Z');
    const lost = planPolicy(newer, settings, observed({ peers: [older, newer] }));
    expect(lost.ancestors[0]?.accepted).toMatchObject({ status: 'False', reason: 'Conflicted' });
    expect(lost.ancestors[0]?.accepted.message).toContain('first');
    expect(lost.routeUpdates).toEqual([]);
    const won = planPolicy(older, settings, observed({ peers: [older, newer] }));
    expect(won.ancestors[0]?.accepted.reason).toBe('Accepted');
    // Same creation time: the name decides, so both agree on one winner.
    const twin = policy('another', [ref('shop')], '2026-01-01T00:00:00Z');
    expect(
      planPolicy(older, settings, observed({ peers: [older, twin] })).ancestors[0]?.accepted.reason,
    ).toBe('Conflicted');
    // Different rules of one route do not conflict.
    const web = policy('web', [ref('shop', 'web')], '2026-01-03T00:00:00Z');
    expect(
      planPolicy(web, settings, observed({ peers: [newer, web] })).ancestors[0]?.accepted.reason,
    ).toBe('Accepted');
  });

  it('a reference to another namespace is Invalid and never wired', () => {
    const p = policy('orders', [{ ...ref('shop'), namespace: 'team-b' }]);
    const routes = [{ ...httpRoute('shop'), metadata: { name: 'shop', namespace: 'team-b' } }];
    const plan = planPolicy(p, settings, observed({ routes }));
    expect(plan.ancestors[0]?.accepted).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(plan.routeUpdates).toEqual([]);
  });

  it('says when the gateway cannot call the service: no ExternalAuth in the CRD, or a Gateway target', () => {
    const standard = planPolicy(
      policy('orders', [ref('shop')]),
      settings,
      observed({ externalAuth: false }),
    );
    expect(standard.routeUpdates).toEqual([]);
    expect(standard.ancestors[0]).toMatchObject({
      accepted: { status: 'True' },
      wired: { status: 'False', reason: 'ExternalAuthUnsupported' },
    });
    expect(standard.ancestors[0]?.wired?.message).toContain('docs/concepts/gateway.md');
    const gw = planPolicy(
      policy('orders', [ref('public', undefined, 'Gateway')]),
      settings,
      observed({
        gateways: [
          {
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'Gateway',
            metadata: { name: 'public', namespace: 'team-a' },
          },
        ],
      }),
    );
    expect(gw.ancestors[0]).toMatchObject({
      ancestorRef: { kind: 'Gateway', name: 'public' },
      accepted: { status: 'True' },
      wired: { reason: 'ManualWiringRequired' },
    });
  });

  it('one replica: no budget, and an old one goes', () => {
    const one = rateLimitPolicySchema.parse({
      ...policy('orders', [ref('shop')]),
      spec: {
        targetRefs: [ref('shop')],
        limiter: { replenishRate: 1, burstCapacity: 10 },
        replicas: 1,
      },
    });
    const plan = planPolicy(one, settings, observed());
    expect(plan.objects.map((o) => o.kind)).not.toContain('PodDisruptionBudget');
    expect(plan.stale).toContainEqual(['PodDisruptionBudget', 'orders-decision']);
  });
});

describe('the ExternalAuth filter', () => {
  it('recognises only its own filter: another ExternalAuth, or one naming a Service elsewhere, stays', () => {
    const foreign = {
      type: 'ExternalAuth',
      externalAuth: {
        protocol: 'GRPC',
        backendRef: { name: 'orders-decision', namespace: 'team-b', port: 9191 },
        grpc: {},
      },
    };
    const theirs = {
      type: 'ExternalAuth',
      externalAuth: {
        protocol: 'HTTP',
        backendRef: { name: 'oauth2-proxy', port: 4180 },
        http: {},
      },
    };
    const route = httpRoute('shop', [{ name: 'api', filters: [foreign, theirs] }]);
    expect(
      routeWithFilters(route, { service: 'orders-decision', port: 9191 }, undefined),
    ).toBeUndefined();
  });

  it('finds the ExternalAuth type in an HTTPRoute CRD schema', () => {
    const crd = (values: string[]) => ({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'httproutes.gateway.networking.k8s.io' },
      spec: {
        versions: [
          {
            name: 'v1',
            served: true,
            schema: {
              openAPIV3Schema: {
                properties: {
                  spec: {
                    properties: {
                      rules: {
                        items: {
                          properties: {
                            filters: { items: { properties: { type: { enum: values } } } },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        ],
      },
    });
    expect(crdHasExternalAuth(crd(['URLRewrite', 'ExternalAuth']))).toBe(true);
    expect(crdHasExternalAuth(crd(['URLRewrite']))).toBe(false);
    expect(crdHasExternalAuth(undefined)).toBe(false);
  });
});

describe('ancestor status', () => {
  it('keeps lastTransitionTime while a condition keeps its status', () => {
    const planned = [
      {
        ancestorRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'public' },
        accepted: { status: 'True' as const, reason: PolicyReasons.Accepted, message: 'ok' },
      },
    ];
    const first = ancestorStatuses([], planned, 1, Date.parse('2026-01-01T00:00:00Z'));
    const second = ancestorStatuses(first, planned, 2, Date.parse('2026-01-01T01:00:00Z'));
    expect(second[0]?.conditions[0]).toMatchObject({
      lastTransitionTime: '2026-01-01T00:00:00Z',
      observedGeneration: 2,
    });
    expect(second[0]?.controllerName).toBe('portcullis.dev/operator');
  });
});
