import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../operator/runtime/backoff.ts';
import { WorkQueue } from '../../operator/runtime/work-queue.ts';
import { ManualClock } from '../harness/manual-clock.ts';

const policy = { baseMs: 100, maxMs: 1000 };

describe('work queue', () => {
  it('queues a key once however often it is added', async () => {
    const q = new WorkQueue(new ManualClock(), policy);
    q.add('a');
    q.add('a');
    q.add('b');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never hands a key to two workers: an add during processing re-queues it after done', async () => {
    const q = new WorkQueue(new ManualClock(), policy);
    q.add('a');
    const key = await q.get();
    q.add('a');
    expect(q.length).toBe(0);
    q.done(key ?? '');
    expect(q.length).toBe(1);
    expect(await q.get()).toBe('a');
  });

  it('retries with exponential backoff per key and forget() resets it', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue(clock, policy);
    expect(q.addRateLimited('a')).toBe(100);
    await clock.advance(99);
    expect(q.length).toBe(0);
    await clock.advance(1);
    expect(q.length).toBe(1);
    await q.get();
    q.done('a');
    expect(q.addRateLimited('a')).toBe(200);
    expect(q.addRateLimited('a')).toBe(400);
    q.forget('a');
    expect(q.addRateLimited('a')).toBe(100);
  });

  it('caps the backoff', () => {
    expect(backoffDelay(policy, 20)).toBe(1000);
    expect(backoffDelay({ ...policy, jitter: 0.5 }, 0, () => 0)).toBe(50);
  });

  it('a pending get() resolves when a key arrives and undefined after shutDown', async () => {
    const q = new WorkQueue(new ManualClock(), policy);
    const first = q.get();
    q.add('x');
    expect(await first).toBe('x');
    const second = q.get();
    q.shutDown();
    expect(await second).toBeUndefined();
  });

  it('addAfter keeps the earlier of two delays', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue(clock, policy);
    q.addAfter('a', 500);
    q.addAfter('a', 200);
    q.addAfter('a', 900);
    await clock.advance(200);
    expect(q.length).toBe(1);
  });
});

describe('work queue fairness', () => {
  it('hands out the ready keys of busy namespaces in turn, not in arrival order', async () => {
    const queue = new WorkQueue(new ManualClock(), { baseMs: 10, maxMs: 100 });
    for (let i = 0; i < 300; i++) queue.add(`team-b/broken-${i}`);
    queue.add('team-a/new');
    queue.add('team-c');
    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      const key = await queue.get();
      if (key !== undefined) {
        order.push(key);
        queue.done(key);
      }
    }
    expect(order).toEqual(['team-b/broken-0', 'team-a/new', 'team-c', 'team-b/broken-1']);
    expect(queue.length).toBe(298);
  });
});
