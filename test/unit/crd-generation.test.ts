// The CRDs generated from operator/api: structural everywhere, bounded everywhere, the CEL
// rules and printer columns in place, and the committed files up to date.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  crdSources,
  INSECURE_REDIRECT_URI_RULE,
  oauthClientSpecSchema,
  rateLimitRouteSpecSchema,
  REDIRECT_URI_RULE,
  REQUESTED_TOKENS_RULE,
} from '../../operator/api/index.ts';
import { buildCrd, GENERATED_HEADER, type SchemaNode } from '../../scripts/crds/build-crd.ts';
import { renderCrds } from '../../scripts/gen-crds.ts';

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

function walk(node: Node, where: string, visit: (node: Node, where: string) => void): void {
  visit(node, where);
  const props = node['properties'];
  if (isNode(props)) for (const [k, v] of Object.entries(props)) if (isNode(v)) walk(v, `${where}.${k}`, visit);
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
      if (node['x-kubernetes-int-or-string'] !== true) expect(node['type'], where).toBeTypeOf('string');
      if (node['properties'] !== undefined) expect(node['additionalProperties'], where).toBeUndefined();
      expect(JSON.stringify(node)).not.toContain('$ref');
    });
  });

  it('bounds every string and list, and describes every field of the spec', () => {
    walk(root, '$', (node, where) => {
      if (node['type'] === 'string' && node['enum'] === undefined && node['format'] !== 'date-time' && !/^\$\.(apiVersion|kind)$/.test(where)) {
        expect(node['maxLength'], where).toBeTypeOf('number');
      }
      if (node['type'] === 'array') expect(node['maxItems'], where).toBeTypeOf('number');
      if (where.startsWith('$.spec.') && !/(\[\]|\{\})$/.test(where)) expect(node['description'], where).toBeTypeOf('string');
    });
  });

  it('has the status subresource, short names, a category and printer columns', () => {
    const spec = crd['spec'] as Node;
    const [version] = spec['versions'] as Node[];
    expect((version as Node)['subresources']).toEqual({ status: {} });
    expect((spec['names'] as Node)['shortNames']).toEqual(source.shortNames);
    expect((spec['names'] as Node)['categories']).toContain('portcullis');
    expect(((version as Node)['additionalPrinterColumns'] as Node[]).map((c) => c['name'])).toContain('Status');
  });

  it('describes observedGeneration and conditions in the status', () => {
    const status = at(root, 'status');
    expect(at(status, 'observedGeneration')['type']).toBe('integer');
    expect(at(status, 'conditions')['x-kubernetes-list-map-keys']).toEqual(['type']);
  });
});

describe('cross-field rules', () => {
  const rlr = openApi(buildCrd(crdSources[0]!));
  const oac = openApi(buildCrd(crdSources[1]!));

  it('carries requestedTokens <= burstCapacity as CEL with the message zod uses', () => {
    const rules = at(rlr, 'spec.limiter')['x-kubernetes-validations'] as Node[];
    expect(rules).toContainEqual(expect.objectContaining({ message: REQUESTED_TOKENS_RULE, fieldPath: '.requestedTokens' }));
    const parsed = rateLimitRouteSpecSchema.safeParse({ target: { image: 'x' }, limiter: { replenishRate: 1, burstCapacity: 1, requestedTokens: 2 } });
    expect(parsed.error?.issues[0]?.message).toBe(REQUESTED_TOKENS_RULE);
  });

  it('checks redirect URIs are absolute http(s) without fragment, in CEL and in zod', () => {
    const items = at(oac, 'spec.redirectUris')['items'] as Node;
    expect(items['x-kubernetes-validations']).toContainEqual(expect.objectContaining({ message: REDIRECT_URI_RULE }));
    for (const bad of ['/callback', 'app.example.com/cb', 'https://a.example/cb#frag', 'javascript:alert(1)']) {
      expect(oauthClientSpecSchema.safeParse({ displayName: 'd', redirectUris: [bad] }).success, bad).toBe(false);
    }
    expect(oauthClientSpecSchema.safeParse({ displayName: 'd', redirectUris: ['http://127.0.0.1:3000/callback'] }).success).toBe(true);
  });

  it('allows http redirect URIs only to loopback hosts unless allowInsecureRedirectUris, in CEL and in zod', () => {
    const rules = at(oac, 'spec')['x-kubernetes-validations'] as Node[];
    expect(rules).toContainEqual(expect.objectContaining({ message: INSECURE_REDIRECT_URI_RULE, fieldPath: '.redirectUris' }));
    for (const bad of ['http://app.example.com/cb', 'http://localhost.example.com/cb', 'http://127.0.0.1@evil.example/cb']) {
      const parsed = oauthClientSpecSchema.safeParse({ displayName: 'd', redirectUris: ['https://app.example.com/cb', bad] });
      expect(parsed.error?.issues.map((i) => i.message), bad).toEqual([INSECURE_REDIRECT_URI_RULE]);
      expect(oauthClientSpecSchema.safeParse({ displayName: 'd', redirectUris: [bad], allowInsecureRedirectUris: true }).success, bad).toBe(true);
    }
    for (const ok of ['http://localhost:3000/cb', 'http://127.0.0.1/cb', 'http://[::1]:8080/cb']) {
      expect(oauthClientSpecSchema.safeParse({ displayName: 'd', redirectUris: [ok] }).success, ok).toBe(true);
    }
  });
});

describe('defaults', () => {
  it('are the same in the CRD as in zod', () => {
    const limiter = at(openApi(buildCrd(crdSources[0]!)), 'spec.limiter');
    const parsed = rateLimitRouteSpecSchema.parse({ target: { image: 'x' }, limiter: { replenishRate: 1, burstCapacity: 10 } });
    expect(at(limiter, 'requestedTokens')['default']).toBe(parsed.limiter.requestedTokens);
    expect(at(limiter, 'keyHeader')['default']).toBe(parsed.limiter.keyHeader);
    expect(at(limiter, 'onStoreError')['default']).toBe(parsed.limiter.onStoreError);
    expect(parsed.limiter).toMatchObject({ requestedTokens: 1, keyHeader: 'USER-ID', onStoreError: 'allow', onMissingKey: { status: 400 } });
  });
});

describe('the committed files', () => {
  it('match what make crds writes, in crds/ and in the chart, with the generated header', () => {
    for (const [name, text] of renderCrds()) {
      expect(text.startsWith(GENERATED_HEADER)).toBe(true);
      expect(readFileSync(`crds/${name}`, 'utf8'), `crds/${name} is stale: run make crds`).toBe(text);
      expect(readFileSync(`charts/portcullis/crds/${name}`, 'utf8'), `chart copy of ${name} is stale: run make crds`).toBe(text);
    }
  });
});
