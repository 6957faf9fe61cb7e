// The manager runs the pieces in controller-runtime's order: informers start at once (a standby
// keeps a warm cache, so a take-over reconciles within one lease duration); controllers start
// only once this process holds the leader lease; shutdown stops controllers (waiting for the
// reconciles in flight), releases the lease, then stops the informers.
import type { Logger } from 'pino';
import type { Controller } from './controller.ts';
import type { Informer } from './informer.ts';
import type { LeaderElector } from './leader-election.ts';
import type { OperatorMetrics } from './metrics.ts';

export interface ManagerOptions {
  informers: readonly Informer[];
  controllers: readonly Controller[];
  /** Undefined: no leader election (a single replica, or tests). */
  elector?: LeaderElector;
  metrics: OperatorMetrics;
  log: Logger;
  /** Called when the lease is lost: the process must stop reconciling (main.ts exits). */
  onLeadershipLost?: () => void;
}

export class Manager {
  readonly #o: ManagerOptions;
  readonly #stop = new AbortController();
  #controllersStarted = false;
  #renewing: Promise<void> | undefined;
  #started: Promise<void> | undefined;

  constructor(options: ManagerOptions) {
    this.#o = options;
  }

  /** Caches synced. */
  get ready(): boolean {
    return this.#o.informers.every((i) => i.hasSynced);
  }

  get leading(): boolean {
    return this.#controllersStarted;
  }

  /** Resolves once caches are synced; controllers start in the background when leadership is won. */
  async start(): Promise<void> {
    for (const informer of this.#o.informers) informer.start();
    await Promise.all(this.#o.informers.map((i) => i.waitForSync()));
    this.#o.log.info(
      { informers: this.#o.informers.map((i) => `${i.type.plural}:${i.size}`) },
      'caches synced',
    );
    this.#started = this.#lead();
  }

  /** Resolves when controllers have started (leader), for tests and the benchmark. */
  async whenLeading(): Promise<void> {
    await this.#started;
  }

  async #lead(): Promise<void> {
    const elector = this.#o.elector;
    if (elector !== undefined) {
      this.#o.log.info('waiting for the leader lease');
      const won = await elector.acquire(this.#stop.signal);
      if (!won) return;
      this.#renewing = elector.keepRenewing(this.#stop.signal, () => {
        this.#o.metrics.isLeader.set(0);
        this.#o.onLeadershipLost?.();
      });
    }
    this.#o.metrics.isLeader.set(1);
    for (const c of this.#o.controllers) c.start();
    this.#controllersStarted = true;
    this.#o.log.info(
      { controllers: this.#o.controllers.map((c) => c.name) },
      'controllers started',
    );
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await Promise.all(this.#o.controllers.map((c) => c.stop()));
    await this.#renewing;
    await this.#o.elector?.release();
    this.#o.metrics.isLeader.set(0);
    await Promise.all(this.#o.informers.map((i) => i.stop()));
  }
}
