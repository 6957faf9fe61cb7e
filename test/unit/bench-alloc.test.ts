// The allocation tool's fold of a sampling heap profile: self bytes per function (one entry for a
// function met on several paths), the total, both per request answered.
import { describe, expect, it } from 'vitest';
import { foldAllocations } from '../../bench/tools/alloc.ts';
import type { AllocationNode } from '../harness/inspector.ts';

const node = (functionName: string, url: string, lineNumber: number, selfSize: number, children: AllocationNode[] = []): AllocationNode => ({
  callFrame: { functionName, url, lineNumber },
  selfSize,
  children,
});

describe('allocation profile fold', () => {
  const head = node('(root)', '', -1, 0, [
    node('onRequest', 'file:///app/dist/sidecar/main.mjs', 9, 4000, [
      node('processHeader', 'node:_http_outgoing', 573, 6000),
      node('', 'file:///app/dist/sidecar/main.mjs', 41, 1000),
    ]),
    node('flush', 'file:///app/dist/sidecar/main.mjs', 19, 0, [node('processHeader', 'node:_http_outgoing', 573, 2000)]),
  ]);

  it('sums self bytes per function across paths and divides by the requests', () => {
    const fold = foldAllocations(head, 10);
    expect(fold.bytesPerRequest).toBe(1300);
    expect(fold.top).toEqual([
      { fn: 'processHeader node:_http_outgoing:574', bytesPerRequest: 800 },
      { fn: 'onRequest main.mjs:10', bytesPerRequest: 400 },
      { fn: '(anonymous) main.mjs:42', bytesPerRequest: 100 },
    ]);
  });

  it('keeps only the largest functions when asked for fewer', () => {
    expect(foldAllocations(head, 10, 1).top).toEqual([{ fn: 'processHeader node:_http_outgoing:574', bytesPerRequest: 800 }]);
  });

  it('refuses a run that answered no request instead of dividing by zero', () => {
    expect(() => foldAllocations(head, 0)).toThrow(RangeError);
  });
});
