// Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules: a lease is expired
// when its record has not changed for leaseDuration as measured on OUR clock since we last saw
// it change (never compare the holder's timestamps with our clock: clocks differ); the leader
// renews every retryPeriod and gives up when it could not renew for renewDeadline; on graceful
// shutdown it releases the lease so that a standby takes over at once.
import type { Logger } from 'pino';
import { sleep, type Clock } from './clock.ts';
import { isConflict } from './errors.ts';
import type { KubeClient } from './kube-client.ts';
import { asRecord, type KubeObject } from './kube-object.ts';
import { resourceTypes } from './resource-types.ts';

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  /** How long a lease is valid without renewal, ms (client-go default 15 s). */
  leaseDurationMs: number;
  /** The leader gives up when it could not renew for this long, ms (< leaseDuration). */
  renewDeadlineMs: number;
  /** Pause between attempts, ms. */
  retryPeriodMs: number;
}

interface LeaseRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions: number;
}

/** MicroTime as the API wants it: RFC 3339 with microseconds. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}

function recordOf(lease: KubeObject): LeaseRecord {
  const spec = asRecord(lease['spec']) ?? {};
  return {
    holderIdentity: typeof spec['holderIdentity'] === 'string' ? spec['holderIdentity'] : '',
    leaseDurationSeconds:
      typeof spec['leaseDurationSeconds'] === 'number' ? spec['leaseDurationSeconds'] : 0,
    acquireTime: typeof spec['acquireTime'] === 'string' ? spec['acquireTime'] : undefined,
    renewTime: typeof spec['renewTime'] === 'string' ? spec['renewTime'] : undefined,
    leaseTransitions: typeof spec['leaseTransitions'] === 'number' ? spec['leaseTransitions'] : 0,
  };
}

export class LeaderElector {
  readonly #client: KubeClient;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #o: LeaderElectionOptions;
  #observed: { key: string; at: number } | undefined;
  #lease: KubeObject | undefined;
  #leader = false;

  constructor(client: KubeClient, clock: Clock, log: Logger, options: LeaderElectionOptions) {
    this.#client = client;
    this.#clock = clock;
    this.#log = log.child({
      lease: `${options.namespace}/${options.name}`,
      identity: options.identity,
    });
    this.#o = options;
  }

  get isLeader(): boolean {
    return this.#leader;
  }

  /** Blocks until this process holds the lease (true) or the signal aborts (false). */
  async acquire(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (await this.#tryAcquireOrRenew()) {
        this.#leader = true;
        this.#log.info('became leader');
        return true;
      }
      await sleep(this.#clock, this.#o.retryPeriodMs, signal);
    }
    return false;
  }

  /**
   * Renews every retryPeriod until the signal aborts (resolves) or renewal failed for
   * renewDeadline (calls onLost; the caller must stop reconciling at once).
   */
  async keepRenewing(signal: AbortSignal, onLost: () => void): Promise<void> {
    let lastRenew = this.#clock.now();
    while (!signal.aborted) {
      await sleep(this.#clock, this.#o.retryPeriodMs, signal);
      if (signal.aborted) return;
      if (await this.#tryAcquireOrRenew()) {
        lastRenew = this.#clock.now();
        continue;
      }
      if (this.#clock.now() - lastRenew >= this.#o.renewDeadlineMs) {
        this.#leader = false;
        this.#log.error('lost the leader lease');
        onLost();
        return;
      }
    }
  }

  /** Gives the lease up (holder emptied, duration 1 s) so that a standby takes over at once. */
  async release(): Promise<void> {
    if (!this.#leader || this.#lease === undefined) return;
    this.#leader = false;
    const spec = {
      ...recordOf(this.#lease),
      holderIdentity: '',
      leaseDurationSeconds: 1,
      renewTime: microTime(this.#clock.now()),
    };
    try {
      await this.#client.update({ ...this.#lease, spec });
      this.#log.info('released the leader lease');
    } catch (err) {
      this.#log.warn({ err }, 'could not release the leader lease');
    }
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const now = this.#clock.now();
    const leaseSeconds = Math.max(1, Math.ceil(this.#o.leaseDurationMs / 1000));
    try {
      const current = await this.#client.get(resourceTypes.lease, this.#o.namespace, this.#o.name);
      if (current === undefined) {
        this.#lease = await this.#client.create({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.#o.name, namespace: this.#o.namespace },
          spec: {
            holderIdentity: this.#o.identity,
            leaseDurationSeconds: leaseSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        });
        return true;
      }
      const record = recordOf(current);
      const observedKey = `${record.holderIdentity}|${record.renewTime ?? ''}|${record.leaseDurationSeconds}`;
      if (this.#observed?.key !== observedKey) this.#observed = { key: observedKey, at: now };
      const heldByUs = record.holderIdentity === this.#o.identity;
      const expired =
        record.holderIdentity === '' ||
        this.#observed.at + record.leaseDurationSeconds * 1000 <= now;
      if (!heldByUs && !expired) return false;
      const spec: LeaseRecord = heldByUs
        ? { ...record, leaseDurationSeconds: leaseSeconds, renewTime: microTime(now) }
        : {
            holderIdentity: this.#o.identity,
            leaseDurationSeconds: leaseSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: record.leaseTransitions + 1,
          };
      this.#lease = await this.#client.update({ ...current, spec });
      return true;
    } catch (err) {
      if (!isConflict(err)) this.#log.warn({ err }, 'lease request failed');
      return false;
    }
  }
}
