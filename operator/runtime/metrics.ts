// The operator's Prometheus metrics, on a registry of its own (never prom-client's global one,
// so that tests can build several operators in one process).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RequestRecord } from './http-kube-client.ts';

export interface OperatorMetrics {
  readonly registry: Registry;
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileDuration: Histogram<'controller'>;
  readonly queueDepth: Gauge<'controller'>;
  readonly queueAdds: Counter<'controller'>;
  readonly queueRetries: Counter<'controller'>;
  readonly informerRestarts: Counter<'resource' | 'reason'>;
  readonly apiRequests: Counter<'verb' | 'resource' | 'code'>;
  readonly appliesSkipped: Counter<'kind'>;
  readonly isLeader: Gauge;
  recordRequest(record: RequestRecord): void;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): OperatorMetrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false)
    collectDefaultMetrics({ register: registry, prefix: 'portcullis_operator_' });
  const registers = [registry];
  const apiRequests = new Counter({
    name: 'portcullis_operator_kube_api_requests_total',
    help: 'Requests to the Kubernetes API server by verb, resource and HTTP status code',
    labelNames: ['verb', 'resource', 'code'] as const,
    registers,
  });
  return {
    registry,
    reconcileTotal: new Counter({
      name: 'portcullis_operator_reconcile_total',
      help: 'Reconciles by controller and result (success, error, requeue)',
      labelNames: ['controller', 'result'] as const,
      registers,
    }),
    reconcileDuration: new Histogram({
      name: 'portcullis_operator_reconcile_duration_seconds',
      help: 'Time spent in one reconcile, s',
      labelNames: ['controller'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    queueDepth: new Gauge({
      name: 'portcullis_operator_workqueue_depth',
      help: 'Keys waiting in the work queue',
      labelNames: ['controller'] as const,
      registers,
    }),
    queueAdds: new Counter({
      name: 'portcullis_operator_workqueue_adds_total',
      help: 'Keys added to the work queue',
      labelNames: ['controller'] as const,
      registers,
    }),
    queueRetries: new Counter({
      name: 'portcullis_operator_workqueue_retries_total',
      help: 'Keys re-queued with backoff after a failed reconcile',
      labelNames: ['controller'] as const,
      registers,
    }),
    informerRestarts: new Counter({
      name: 'portcullis_operator_informer_restarts_total',
      help: 'List/watch restarts by resource and reason (gone = 410, error = anything else)',
      labelNames: ['resource', 'reason'] as const,
      registers,
    }),
    apiRequests,
    appliesSkipped: new Counter({
      name: 'portcullis_operator_applies_skipped_total',
      help: 'Applies not sent because the live object already matched the desired one',
      labelNames: ['kind'] as const,
      registers,
    }),
    isLeader: new Gauge({
      name: 'portcullis_operator_leader',
      help: '1 while this process holds the leader lease',
      registers,
    }),
    recordRequest(record) {
      apiRequests.inc({
        verb: record.verb,
        resource: record.resource,
        code: String(record.status),
      });
    },
  };
}
