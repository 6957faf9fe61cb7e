// The whole operator (buildOperator) over the in-memory API: informers -> queue -> reconcilers,
import { pino } from 'pino';
// leader election, resync without writes, graceful stop releasing the lease.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildOperator, type Operator } from '../../operator/app.ts';
import { loadOperatorConfig } from '../../operator/config.ts';
import { systemClock } from '../../operator/runtime/clock.ts';
import { asRecord } from '../../operator/runtime/kube-object.ts';
import { MemoryKubeClient } from '../../operator/runtime/memory-kube-client.ts';
import { createMetrics } from '../../operator/runtime/metrics.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { clientObject, routeObject, silent } from './operator-fixtures.ts';

const running: Operator[] = [];
const metricsByOperator = new Map<Operator, ReturnType<typeof createMetrics>>();

/** Reconciles done so far by the route controller of op. */
async function metricsOf(op: Operator): Promise<number> {
  const m = metricsByOperator.get(op);
  const value = await m?.reconcileTotal.get();
  return (value?.values ?? []).filter((v) => v.labels['controller'] === 'ratelimitroute').reduce((sum, v) => sum + v.value, 0);
}
afterEach(async () => {
  for (const op of running.splice(0)) await op.manager.stop();
});

function start(client: MemoryKubeClient, identity: string, env: Record<string, string> = {}): Operator {
  const config = loadOperatorConfig({
    PORTCULLIS_LEADER_ELECTION_NAMESPACE: 'ops',
    PORTCULLIS_LEASE_DURATION_MS: '1500',
    PORTCULLIS_RENEW_DEADLINE_MS: '1000',
    PORTCULLIS_RETRY_PERIOD_MS: '200',
    PORTCULLIS_RESYNC_INTERVAL_MS: '300',
    ...env,
  });
  const metrics = createMetrics({ defaultMetrics: false });
  const op = buildOperator({ client, clock: systemClock, log: process.env['DEBUG_OP'] ? pino({ level: 'debug' }) : silent, metrics, config, identity });
  metricsByOperator.set(op, metrics);
  running.push(op);
  void op.manager.start();
  return op;
}

describe('operator (in-memory API)', () => {
  it('reconciles routes and clients from events, and periodic resyncs write nothing', async () => {
    const client = new MemoryKubeClient();
    const op = start(client, 'a');
    client.put(routeObject());
    client.put(clientObject());
    await vi.waitFor(
      () => {
        expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeDefined();
        expect(asRecord(client.peek(resourceTypes.oauthClient, 'team-a', 'demo-app')?.['status'])?.['conditions']).toEqual([expect.objectContaining({ reason: 'Registered' })]);
      },
      { timeout: 5000 },
    );
    // Settled = no write for 600 ms (the machine may be busy); then three resync periods (300 ms
    // each) must pass without a single write while reconciles do happen.
    const writes = () => client.writes().filter((w) => w.kind !== 'Lease' && w.kind !== 'Event').length;
    let last = -1;
    while (last !== writes()) {
      last = writes();
      await new Promise((r) => setTimeout(r, 600));
    }
    const reconciles = () => metricsOf(op);
    const before = await reconciles();
    await new Promise((r) => setTimeout(r, 1000));
    expect(writes()).toBe(last);
    expect(await reconciles()).toBeGreaterThan(before);
  });

  it('a deleted child comes back through the informer -> owner mapping', async () => {
    const client = new MemoryKubeClient();
    start(client, 'a');
    client.put(routeObject());
    await vi.waitFor(() => expect(client.peek(resourceTypes.configMap, 'team-a', 'all-sidecar')).toBeDefined(), { timeout: 5000 });
    client.remove(resourceTypes.configMap, 'team-a', 'all-sidecar');
    await vi.waitFor(() => expect(client.peek(resourceTypes.configMap, 'team-a', 'all-sidecar')).toBeDefined(), { timeout: 5000 });
  });

  it('only the leader reconciles; on graceful stop the standby takes over at once', async () => {
    const client = new MemoryKubeClient();
    const a = start(client, 'a');
    await vi.waitFor(() => expect(a.manager.leading).toBe(true), { timeout: 5000 });
    const b = start(client, 'b');
    client.put(routeObject());
    await vi.waitFor(() => expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeDefined(), { timeout: 5000 });
    expect(b.manager.leading).toBe(false);
    await a.manager.stop();
    running.splice(running.indexOf(a), 1);
    await vi.waitFor(() => expect(b.manager.leading).toBe(true), { timeout: 5000 });
    client.remove(resourceTypes.service, 'team-a', 'all');
    await vi.waitFor(() => expect(client.peek(resourceTypes.service, 'team-a', 'all')).toBeDefined(), { timeout: 5000 });
  });

  it('watches only the configured namespaces', async () => {
    const client = new MemoryKubeClient();
    start(client, 'a', { PORTCULLIS_WATCH_NAMESPACES: 'team-b' });
    client.put(routeObject());
    const other = routeObject('other');
    other.metadata.namespace = 'team-b';
    client.put(other);
    await vi.waitFor(() => expect(client.peek(resourceTypes.deployment, 'team-b', 'other')).toBeDefined(), { timeout: 5000 });
    expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeUndefined();
  });
});
