// The whole operator (buildOperator) over the in-memory API: informers -> queue -> reconcilers,
// leader election, resync without writes, graceful stop releasing the lease. Time is a
// ManualClock: the lease, the retries and the resyncs move only when a test advances it.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { buildOperator, type Operator } from '../../operator/app.ts';
import { loadOperatorConfig } from '../../operator/config.ts';
import { asRecord } from '../../operator/runtime/kube-object.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { createMetrics } from '../../operator/runtime/metrics.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { ManualClock } from '../harness/manual-clock.ts';
import { clientObject, routeObject, silent } from './operator-fixtures.ts';

const running: Operator[] = [];
const metricsByOperator = new Map<Operator, ReturnType<typeof createMetrics>>();

/** Reconciles done so far by the route controller of op. */
async function metricsOf(op: Operator): Promise<number> {
  const m = metricsByOperator.get(op);
  const value = await m?.reconcileTotal.get();
  return (value?.values ?? [])
    .filter((v) => v.labels['controller'] === 'ratelimitroute')
    .reduce((sum, v) => sum + v.value, 0);
}
afterEach(async () => {
  for (const op of running.splice(0)) await op.manager.stop();
});

/**
 * Moves the clock on in 50 ms steps until check passes; fails with check's last error after 30 s
 * of clock time (several lease durations: anything due has happened by then).
 */
async function advanceUntil(clock: ManualClock, check: () => unknown): Promise<void> {
  const deadline = clock.now() + 30_000;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (clock.now() >= deadline) throw err;
      await clock.advance(50);
    }
  }
}

function start(
  client: MemoryKubeClient,
  clock: ManualClock,
  identity: string,
  env: Record<string, string> = {},
): Operator {
  const config = loadOperatorConfig({
    PORTCULLIS_LEADER_ELECTION_NAMESPACE: 'ops',
    PORTCULLIS_LEASE_DURATION_MS: '1500',
    PORTCULLIS_RENEW_DEADLINE_MS: '1000',
    PORTCULLIS_RETRY_PERIOD_MS: '200',
    PORTCULLIS_RESYNC_INTERVAL_MS: '300',
    ...env,
  });
  const metrics = createMetrics({ defaultMetrics: false });
  const op = buildOperator({
    client,
    clock,
    log: process.env['DEBUG_OP'] ? pino({ level: 'debug' }) : silent,
    metrics,
    config,
    identity,
  });
  metricsByOperator.set(op, metrics);
  running.push(op);
  void op.manager.start();
  return op;
}

describe('operator (in-memory API)', () => {
  it('reconciles routes and clients from events, and periodic resyncs write nothing', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const op = start(client, clock, 'a');
    client.put(routeObject());
    client.put(clientObject());
    await advanceUntil(clock, () => {
      expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeDefined();
      expect(
        asRecord(client.peek(resourceTypes.oauthClient, 'team-a', 'demo-app')?.['status'])?.[
          'conditions'
        ],
      ).toEqual([expect.objectContaining({ reason: 'Registered' })]);
    });
    // Settled = no write over 600 ms of clock time; then three resync periods (300 ms each) must
    // pass without a single write while reconciles do happen.
    const writes = () =>
      client.writes().filter((w) => w.kind !== 'Lease' && w.kind !== 'Event').length;
    let last = -1;
    while (last !== writes()) {
      last = writes();
      await clock.advance(600);
    }
    const reconciles = () => metricsOf(op);
    const before = await reconciles();
    await clock.advance(1000);
    expect(writes()).toBe(last);
    expect(await reconciles()).toBeGreaterThan(before);
  });

  it('a deleted child comes back through the informer -> owner mapping', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    start(client, clock, 'a');
    client.put(routeObject());
    await advanceUntil(clock, () =>
      expect(client.peek(resourceTypes.configMap, 'team-a', 'all-sidecar')).toBeDefined(),
    );
    client.remove(resourceTypes.configMap, 'team-a', 'all-sidecar');
    await advanceUntil(clock, () =>
      expect(client.peek(resourceTypes.configMap, 'team-a', 'all-sidecar')).toBeDefined(),
    );
  });

  it('only the leader reconciles; on graceful stop the standby takes over at once', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    const a = start(client, clock, 'a');
    await advanceUntil(clock, () => expect(a.manager.leading).toBe(true));
    const b = start(client, clock, 'b');
    client.put(routeObject());
    await advanceUntil(clock, () =>
      expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeDefined(),
    );
    expect(b.manager.leading).toBe(false);
    await a.manager.stop();
    running.splice(running.indexOf(a), 1);
    await advanceUntil(clock, () => expect(b.manager.leading).toBe(true));
    client.remove(resourceTypes.service, 'team-a', 'all');
    await advanceUntil(clock, () =>
      expect(client.peek(resourceTypes.service, 'team-a', 'all')).toBeDefined(),
    );
  });

  it('watches only the configured namespaces', async () => {
    const client = new MemoryKubeClient();
    const clock = new ManualClock();
    start(client, clock, 'a', { PORTCULLIS_WATCH_NAMESPACES: 'team-b' });
    client.put(routeObject());
    const other = routeObject('other');
    other.metadata.namespace = 'team-b';
    client.put(other);
    await advanceUntil(clock, () =>
      expect(client.peek(resourceTypes.deployment, 'team-b', 'other')).toBeDefined(),
    );
    expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeUndefined();
  });
});
