// The CRDs generated from operator/api: structural everywhere, bounded everywhere, the CEL
// rules and printer columns in place, and the committed files up to date.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  crdSources,
  INSECURE_REDIRECT_URI_RULE,
  KEY_JWT_FIELDS_RULE,
  LIMITER_FORM_RULE,
  METHODS_RULE,
  oauthClientSpecSchema,
  rateLimitRouteSpecSchema,
  REDIRECT_URI_RULE,
  REQUESTED_TOKENS_RULE,
  RULE_NAMES_RULE,
  SINGLE_LIMIT_RULE,
} from '../../operator/api/index.ts';
import { buildCrd, GENERATED_HEADER, type SchemaNode } from '../../scripts/crds/build-crd.ts';
import { CRD_TEMPLATE, renderCrds, renderCrdTemplate } from '../../scripts/gen-crds.ts';

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

function walk(node: Node, where: string, visit: (node: Node, where: string) => void): void {
  visit(node, where);
  const props = node['properties'];
  if (isNode(props))
    for (const [k, v] of Object.entries(props)) if (isNode(v)) walk(v, `${where}.${k}`, visit);
  if (isNode(node['items'])) walk(node['items'], `${where}[]`, visit);
  if (isNode(node['additionalProperties'])) walk(node['additionalProperties'], `${where}{}`, visit);
}

function openApi(crd: SchemaNode): Node {
  const spec = crd['spec'] as Node;
  const [version] = spec['versions'] as Node[];
  return ((version as Node)['schema'] as Node)['openAPIV3Schema'] as Node;
}

function at(root: Node, path: string): Node {
  let node = root;
  for (const part of path.split('.')) node = (node['properties'] as Node)[part] as Node;
  return node;
}

describe.each(crdSources.map((s) => [s.kind, s] as const))('the %s CRD', (_kind, source) => {
  const crd = buildCrd(source);
  const root = openApi(crd);

  it('is structural: a type on every node, no additionalProperties beside properties, no $ref', () => {
    walk(root, '$', (node, where) => {
      if (node['x-kubernetes-int-or-string'] !== true)
        expect(node['type'], where).toBeTypeOf('string');
      if (node['properties'] !== undefined)
        expect(node['additionalProperties'], where).toBeUndefined();
      expect(JSON.stringify(node)).not.toContain('$ref');
    });
  });

  it('bounds every string and list, and describes every field of the spec', () => {
    walk(root, '$', (node, where) => {
      if (
        node['type'] === 'string' &&
        node['enum'] === undefined &&
        node['format'] !== 'date-time' &&
        !/^\$\.(apiVersion|kind)$/.test(where)
      ) {
        expect(node['maxLength'], where).toBeTypeOf('number');
      }
      if (node['type'] === 'array') expect(node['maxItems'], where).toBeTypeOf('number');
      if (where.startsWith('$.spec.') && !/(\[\]|\{\})$/.test(where))
        expect(node['description'], where).toBeTypeOf('string');
    });
  });

  it('has the status subresource, short names, a category and printer columns', () => {
    const spec = crd['spec'] as Node;
    const [version] = spec['versions'] as Node[];
    expect((version as Node)['subresources']).toEqual(
      source.scale === undefined ? { status: {} } : { status: {}, scale: source.scale },
    );
    expect((spec['names'] as Node)['shortNames']).toEqual(source.shortNames);
    expect((spec['names'] as Node)['categories']).toContain('portcullis');
    // A Gateway API policy reports per ancestor (Accepted), the other kinds a Ready condition.
    expect(
      ((version as Node)['additionalPrinterColumns'] as Node[]).map((c) => c['name']),
    ).toContain(source.kind === 'RateLimitPolicy' ? 'Accepted' : 'Status');
  });

  it('describes observedGeneration and conditions in the status (per ancestor for a policy)', () => {
    const status = at(root, 'status');
    if (source.kind === 'RateLimitPolicy') {
      const ancestor = at(status, 'ancestors')['items'] as Node;
      expect(at(ancestor, 'conditions')['x-kubernetes-list-map-keys']).toEqual(['type']);
      expect(at(at(ancestor, 'conditions')['items'] as Node, 'observedGeneration')['type']).toBe(
        'integer',
      );
      return;
    }
    expect(at(status, 'observedGeneration')['type']).toBe('integer');
    expect(at(status, 'conditions')['x-kubernetes-list-map-keys']).toEqual(['type']);
  });
});

describe('cross-field rules', () => {
  const rlr = openApi(buildCrd(crdSources[0]!));
  const oac = openApi(buildCrd(crdSources[1]!));

  it('carries requestedTokens <= burstCapacity as CEL with the message zod uses', () => {
    const rules = at(rlr, 'spec.limiter')['x-kubernetes-validations'] as Node[];
    expect(rules).toContainEqual(
      expect.objectContaining({ message: REQUESTED_TOKENS_RULE, fieldPath: '.requestedTokens' }),
    );
    const parsed = rateLimitRouteSpecSchema.safeParse({
      target: { image: 'x' },
      limiter: { replenishRate: 1, burstCapacity: 1, requestedTokens: 2 },
    });
    expect(parsed.error?.issues[0]?.message).toBe(REQUESTED_TOKENS_RULE);
  });

  const limit = { replenishRate: 1, burstCapacity: 10 };
  const rule = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    limits: [limit],
    ...extra,
  });
  const limiterCel = () =>
    (at(rlr, 'spec.limiter')['x-kubernetes-validations'] as Node[]).map((r) => r['message']);
  const rulesNode = () => at(rlr, 'spec.limiter.rules');
  const limitItem = () => at(rulesNode()['items'] as Node, 'limits')['items'] as Node;
  const keyCel = () =>
    (at(rlr, 'spec.limiter.key')['x-kubernetes-validations'] as Node[]).map((r) => r['message']);
  it.each([
    ['both forms', { ...limit, rules: [rule('all')] }, LIMITER_FORM_RULE, [], limiterCel],
    ['neither form', {}, LIMITER_FORM_RULE, [], limiterCel],
    [
      'a single form without burstCapacity',
      { replenishRate: 1 },
      SINGLE_LIMIT_RULE,
      [],
      limiterCel,
    ],
    [
      'a single form with only requestedTokens',
      { requestedTokens: 1 },
      SINGLE_LIMIT_RULE,
      [],
      limiterCel,
    ],
    [
      'duplicate rule names',
      { rules: [rule('a'), rule('b'), rule('a')] },
      RULE_NAMES_RULE,
      ['rules'],
      () => (rulesNode()['x-kubernetes-validations'] as Node[]).map((r) => r['message']),
    ],
    [
      'requestedTokens > burstCapacity in a limit',
      {
        rules: [
          {
            name: 'a',
            limits: [limit, { replenishRate: 1, burstCapacity: 2, requestedTokens: 3 }],
          },
        ],
      },
      REQUESTED_TOKENS_RULE,
      ['rules', 0, 'limits', 1, 'requestedTokens'],
      () => (limitItem()['x-kubernetes-validations'] as Node[]).map((r) => r['message']),
    ],
    [
      'a claim with source header',
      { ...limit, key: { claim: 'sub' } },
      KEY_JWT_FIELDS_RULE,
      ['key'],
      keyCel,
    ],
    [
      'an issuer with source header',
      { ...limit, key: { source: 'header', issuer: { url: 'https://id.example.com' } } },
      KEY_JWT_FIELDS_RULE,
      ['key'],
      keyCel,
    ],
  ] as const)(
    'refuses %s: zod and the CRD say the same',
    (_what, limiter, message, path, celMessages) => {
      const parsed = rateLimitRouteSpecSchema.safeParse({ target: { image: 'x' }, limiter });
      expect(parsed.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
        [['limiter', ...path].join('.'), message],
      ]);
      expect(celMessages()).toContain(message);
    },
  );

  it('rules form: the list is keyed by name (the API server refuses duplicates natively too), methods are a set, limits bounded', () => {
    expect(rulesNode()).toMatchObject({
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      maxItems: 32,
    });
    expect(at(rulesNode()['items'] as Node, 'methods')).toMatchObject({
      'x-kubernetes-list-type': 'set',
      maxItems: 9,
    });
    const twice = rateLimitRouteSpecSchema.safeParse({
      target: { image: 'x' },
      limiter: { rules: [rule('a', { methods: ['GET', 'GET'] })] },
    });
    expect(twice.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['limiter.rules.0.methods', METHODS_RULE],
    ]);
    expect(at(rulesNode()['items'] as Node, 'limits')).toMatchObject({ minItems: 1, maxItems: 4 });
    const five = rateLimitRouteSpecSchema.safeParse({
      target: { image: 'x' },
      limiter: { rules: [{ name: 'a', limits: [limit, limit, limit, limit, limit] }] },
    });
    expect(five.error?.issues.map((i) => i.path.join('.'))).toEqual(['limiter.rules.0.limits']);
  });

  it('accepts a rules route and a jwt route', () => {
    const rules = rateLimitRouteSpecSchema.parse({
      target: { image: 'x' },
      limiter: {
        rules: [
          rule('writes', { path: '/api/**', methods: ['POST', 'PUT'], enforce: false }),
          rule('rest'),
        ],
        unmatched: 'refuse',
      },
    });
    expect(rules.limiter.rules?.map((r) => [r.name, r.path])).toEqual([
      ['writes', '/api/**'],
      ['rest', '/**'],
    ]);
    const jwt = rateLimitRouteSpecSchema.parse({
      target: { image: 'x' },
      limiter: {
        ...limit,
        key: { source: 'jwt', claim: 'client_id', issuer: { url: 'https://id.example.com' } },
      },
    });
    expect(jwt.limiter.key).toEqual({
      source: 'jwt',
      claim: 'client_id',
      issuer: { url: 'https://id.example.com' },
    });
  });

  it('checks redirect URIs are absolute http(s) without fragment, in CEL and in zod', () => {
    const items = at(oac, 'spec.redirectUris')['items'] as Node;
    expect(items['x-kubernetes-validations']).toContainEqual(
      expect.objectContaining({ message: REDIRECT_URI_RULE }),
    );
    for (const bad of [
      '/callback',
      'app.example.com/cb',
      'https://a.example/cb#frag',
      'javascript:alert(1)',
    ]) {
      expect(
        oauthClientSpecSchema.safeParse({ displayName: 'd', redirectUris: [bad] }).success,
        bad,
      ).toBe(false);
    }
    expect(
      oauthClientSpecSchema.safeParse({
        displayName: 'd',
        redirectUris: ['http://127.0.0.1:3000/callback'],
      }).success,
    ).toBe(true);
  });

  it('allows http redirect URIs only to loopback hosts unless allowInsecureRedirectUris, in CEL and in zod', () => {
    const rules = at(oac, 'spec')['x-kubernetes-validations'] as Node[];
    expect(rules).toContainEqual(
      expect.objectContaining({ message: INSECURE_REDIRECT_URI_RULE, fieldPath: '.redirectUris' }),
    );
    for (const bad of [
      'http://app.example.com/cb',
      'http://localhost.example.com/cb',
      'http://127.0.0.1@evil.example/cb',
    ]) {
      const parsed = oauthClientSpecSchema.safeParse({
        displayName: 'd',
        redirectUris: ['https://app.example.com/cb', bad],
      });
      expect(
        parsed.error?.issues.map((i) => i.message),
        bad,
      ).toEqual([INSECURE_REDIRECT_URI_RULE]);
      expect(
        oauthClientSpecSchema.safeParse({
          displayName: 'd',
          redirectUris: [bad],
          allowInsecureRedirectUris: true,
        }).success,
        bad,
      ).toBe(true);
    }
    for (const ok of ['http://localhost:3000/cb', 'http://127.0.0.1/cb', 'http://[::1]:8080/cb']) {
      expect(
        oauthClientSpecSchema.safeParse({ displayName: 'd', redirectUris: [ok] }).success,
        ok,
      ).toBe(true);
    }
  });
});

describe('defaults', () => {
  it('are the same in the CRD as in zod', () => {
    const limiter = at(openApi(buildCrd(crdSources[0]!)), 'spec.limiter');
    const parsed = rateLimitRouteSpecSchema.parse({
      target: { image: 'x' },
      limiter: { replenishRate: 1, burstCapacity: 10 },
    });
    for (const field of ['keyHeader', 'onStoreError', 'unmatched', 'enforce', 'key'] as const) {
      expect(at(limiter, field)['default'], field).toEqual(parsed.limiter[field]);
    }
    expect(parsed.limiter).toMatchObject({
      keyHeader: 'USER-ID',
      onStoreError: 'allow',
      onMissingKey: { status: 400 },
      unmatched: 'forward',
      enforce: true,
      key: { source: 'header' },
    });
  });

  it('requestedTokens has no default: a default would put it on every rules-form route and break the either/or rule', () => {
    const limiter = at(openApi(buildCrd(crdSources[0]!)), 'spec.limiter');
    expect(at(limiter, 'requestedTokens')).not.toHaveProperty('default');
    const parsed = rateLimitRouteSpecSchema.parse({
      target: { image: 'x' },
      limiter: { replenishRate: 1, burstCapacity: 10 },
    });
    expect(parsed.limiter.requestedTokens).toBeUndefined();
  });
});

describe('the committed files', () => {
  it('match what make crds writes, in crds/ and in the chart, with the generated header', () => {
    for (const [name, text] of renderCrds()) {
      expect(text.startsWith(GENERATED_HEADER)).toBe(true);
      expect(readFileSync(`crds/${name}`, 'utf8'), `crds/${name} is stale: run make crds`).toBe(
        text,
      );
      expect(
        readFileSync(`charts/portcullis/crds/${name}`, 'utf8'),
        `chart copy of ${name} is stale: run make crds`,
      ).toBe(text);
    }
    expect(readFileSync(CRD_TEMPLATE, 'utf8'), `${CRD_TEMPLATE} is stale: run make crds`).toBe(
      renderCrdTemplate(),
    );
  });

  it('template the CRDs only behind crds.enabled, each body as in crds/', () => {
    const template = renderCrdTemplate();
    expect(template.startsWith(`${GENERATED_HEADER}{{- if .Values.crds.enabled }}\n`)).toBe(true);
    expect(template.endsWith('{{- end }}\n')).toBe(true);
    const unkept = template.replaceAll(
      '  {{- if .Values.crds.keep }}\n  annotations:\n    helm.sh/resource-policy: keep\n  {{- end }}\n',
      '',
    );
    for (const text of renderCrds().values())
      expect(unkept).toContain(text.slice(GENERATED_HEADER.length));
    expect(() =>
      renderCrdTemplate(
        new Map([
          [
            'x.yaml',
            `${GENERATED_HEADER}kind: X\nmetadata:\n  name: x\ndescription: "{{ oops }}"\n`,
          ],
        ]),
      ),
    ).toThrow(/template action/);
  });
});
