import { describe, expect, it } from 'vitest';
import { matches, stampHash, APPLIED_HASH_ANNOTATION } from '../../operator/runtime/applier.ts';
import { canonicalJson, isSubset, quantityValue } from '../../operator/runtime/compare.ts';

describe('desired-vs-live comparison', () => {
  it('ignores fields the API server defaulted', () => {
    const desired = { spec: { containers: [{ name: 'a', image: 'x' }] } };
    const live = {
      spec: {
        containers: [
          {
            name: 'a',
            image: 'x',
            imagePullPolicy: 'IfNotPresent',
            terminationMessagePath: '/dev/termination-log',
          },
        ],
        dnsPolicy: 'ClusterFirst',
      },
    };
    expect(isSubset(desired, live)).toBe(true);
  });

  it('sees a changed value, a missing list entry and a reordered plain list', () => {
    expect(isSubset({ a: { b: 1 } }, { a: { b: 2 } })).toBe(false);
    expect(
      isSubset(
        {
          env: [
            { name: 'A', value: '1' },
            { name: 'B', value: '2' },
          ],
        },
        { env: [{ name: 'A', value: '1' }] },
      ),
    ).toBe(false);
    expect(isSubset({ args: ['--a', '--b'] }, { args: ['--b', '--a'] })).toBe(false);
    expect(isSubset({ args: ['--a'] }, { args: ['--a', '--b'] })).toBe(false);
  });

  it('matches keyed lists by name or type, whatever their order', () => {
    expect(
      isSubset(
        {
          c: [
            { name: 'b', v: 1 },
            { name: 'a', v: 2 },
          ],
        },
        {
          c: [
            { name: 'a', v: 2 },
            { name: 'b', v: 1 },
          ],
        },
      ),
    ).toBe(true);
    expect(
      isSubset(
        { conditions: [{ type: 'Ready', status: 'True' }] },
        { conditions: [{ type: 'Other' }, { type: 'Ready', status: 'True' }] },
      ),
    ).toBe(true);
  });

  it('compares resource quantities by value', () => {
    expect(quantityValue('500m')).toBe(0.5);
    expect(quantityValue('64Mi')).toBe(64 * 2 ** 20);
    expect(
      isSubset(
        { resources: { limits: { cpu: '0.5' } } },
        { resources: { limits: { cpu: '500m' } } },
      ),
    ).toBe(true);
    expect(
      isSubset({ resources: { limits: { cpu: '1' } } }, { resources: { limits: { cpu: '500m' } } }),
    ).toBe(false);
  });

  it('treats empty desired maps and lists as matching absent ones', () => {
    expect(isSubset({ emptyDir: {} }, {})).toBe(true);
    expect(isSubset({ items: [] }, {})).toBe(true);
  });

  it('canonical JSON does not depend on key order', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] })).toBe(
      canonicalJson({ a: [{ c: 2, d: 1 }], b: 1 }),
    );
  });

  it('the applied-hash stamp makes a dropped field count as a change', () => {
    const v1 = stampHash({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'x' },
      data: { a: '1', b: '2' },
    });
    const v2 = stampHash({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'x' },
      data: { a: '1' },
    });
    expect(v1.metadata.annotations?.[APPLIED_HASH_ANNOTATION]).not.toBe(
      v2.metadata.annotations?.[APPLIED_HASH_ANNOTATION],
    );
    expect(matches(v1, v1)).toBe(true);
    expect(matches(v2, v1)).toBe(false); // same subset, different stamp
  });
});
