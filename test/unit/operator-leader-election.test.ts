import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { asRecord } from '../../operator/runtime/kube-object.ts';
import { LeaderElector } from '../../operator/runtime/leader-election.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { ManualClock, flush } from '../harness/manual-clock.ts';

const log = pino({ level: 'silent' });
const timing = { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 1000 };

function elector(client: MemoryKubeClient, clock: ManualClock, identity: string) {
  return new LeaderElector(client, clock, log, {
    namespace: 'ops',
    name: 'portcullis',
    identity,
    ...timing,
  });
}

function holder(client: MemoryKubeClient): unknown {
  return asRecord(client.peek(resourceTypes.lease, 'ops', 'portcullis')?.['spec'])?.[
    'holderIdentity'
  ];
}

describe('leader election on a Lease', () => {
  it('one leader; the standby takes over within the lease duration after the leader dies', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const a = elector(client, clock, 'a');
    const b = elector(client, clock, 'b');
    const aStop = new AbortController();
    const bStop = new AbortController();
    expect(await a.acquire(aStop.signal)).toBe(true);
    const aRenew = a.keepRenewing(aStop.signal, () => undefined);
    let bWon = false;
    const bAcquire = b.acquire(bStop.signal).then((won) => (bWon = won));
    await clock.advance(10_000);
    expect(bWon).toBe(false); // a keeps renewing
    expect(holder(client)).toBe('a');

    aStop.abort(); // "kill -9": no release
    await aRenew;
    const diedAt = clock.now();
    while (!bWon) await clock.advance(250);
    expect(clock.now() - diedAt).toBeLessThanOrEqual(timing.leaseDurationMs + timing.retryPeriodMs);
    await bAcquire;
    expect(holder(client)).toBe('b');
    expect(
      asRecord(client.peek(resourceTypes.lease, 'ops', 'portcullis')?.['spec'])?.[
        'leaseTransitions'
      ],
    ).toBe(1);
    bStop.abort();
  });

  it('a released lease is taken over at the next attempt', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const a = elector(client, clock, 'a');
    const b = elector(client, clock, 'b');
    expect(await a.acquire(new AbortController().signal)).toBe(true);
    let bWon = false;
    const stop = new AbortController();
    void b.acquire(stop.signal).then((won) => (bWon = won));
    await flush();
    await a.release();
    await clock.advance(timing.retryPeriodMs);
    expect(bWon).toBe(true);
    stop.abort();
  });

  it('the leader gives up (onLost) when it cannot renew within the renew deadline', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const a = elector(client, clock, 'a');
    const stop = new AbortController();
    expect(await a.acquire(stop.signal)).toBe(true);
    let lost = false;
    const renewing = a.keepRenewing(stop.signal, () => (lost = true));
    // another process steals the lease record (e.g. after a long GC pause of ours)
    const lease = client.peek(resourceTypes.lease, 'ops', 'portcullis');
    if (lease === undefined) throw new Error('no lease');
    client.put({ ...lease, spec: { ...asRecord(lease['spec']), holderIdentity: 'intruder' } });
    for (let i = 0; i < 5 && !lost; i++) await clock.advance(1000);
    expect(lost).toBe(true);
    expect(a.isLeader).toBe(false);
    await renewing;
  });
});
