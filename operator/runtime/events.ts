// Events on the custom resources (core/v1 Event), so that `kubectl describe` tells a person what
// the operator did and why something is not ready. The same event for the same object is sent
// at most once per dedupWindowMs: a failing reconcile retried with backoff must not flood etcd.
import type { Logger } from 'pino';
import type { Clock } from './clock.ts';
import { isNamespaceTerminating } from './errors.ts';
import type { KubeClient } from './kube-client.ts';
import type { KubeObject } from './kube-object.ts';

export type EventType = 'Normal' | 'Warning';

/** `Reason`: the reasons its users may record (a union of string literals). */
export interface EventRecorder<Reason extends string = string> {
  event(obj: KubeObject, type: EventType, reason: Reason, message: string): void;
}

export function createEventRecorder<Reason extends string = string>(
  client: KubeClient,
  clock: Clock,
  log: Logger,
  component: string,
  dedupWindowMs = 10 * 60_000,
): EventRecorder<Reason> {
  const lastSent = new Map<string, number>();
  return {
    event(obj, type, reason, message) {
      const now = clock.now();
      const dedupKey = `${obj.metadata.uid ?? obj.metadata.name}|${type}|${reason}|${message}`;
      const previous = lastSent.get(dedupKey);
      if (previous !== undefined && now - previous < dedupWindowMs) return;
      lastSent.set(dedupKey, now);
      if (lastSent.size > 10_000) {
        for (const [k, t] of lastSent) if (now - t >= dedupWindowMs) lastSent.delete(k);
      }
      const timestamp = new Date(now).toISOString().replace(/\.\d+Z$/, 'Z');
      const event: KubeObject = {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: {
          name: `${obj.metadata.name}.${now.toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`,
          namespace: obj.metadata.namespace ?? 'default',
        },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.metadata.name,
          namespace: obj.metadata.namespace,
          uid: obj.metadata.uid,
          resourceVersion: obj.metadata.resourceVersion,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component },
        reportingComponent: component,
        firstTimestamp: timestamp,
        lastTimestamp: timestamp,
        count: 1,
      };
      client.create(event).catch((err: unknown) => {
        if (isNamespaceTerminating(err))
          log.debug({ reason }, 'event not recorded: its namespace is being deleted');
        else log.warn({ err, reason }, 'could not record event');
      });
    },
  };
}

/** For tests and for the standby: records nothing. */
export const noEvents: EventRecorder<never> = { event: () => undefined };
