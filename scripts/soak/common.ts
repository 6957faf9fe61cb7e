// What the soak's parts share (scripts/soak.ts): its length, the limiter rule of its routes, and
// the timeline its loops record (requests, fault windows, config changes) for the invariants.
import { MiB } from '../../test/harness/raw-http.ts';

export const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
export const DURATION_MS = SOAK_SECONDS * 1000;
export const RULE = { replenishRate: 5, burstCapacity: 10, requestedTokens: 1 };

export interface GatewayRecord {
  readonly user: string;
  readonly route: 'allow' | 'deny';
  readonly kind: 'heavy' | 'light';
  readonly via: string;
  readonly send: number;
  readonly recv: number;
  readonly status: number | 'timeout' | 'error';
  /** The limiter decided (its headers are present). */
  readonly decided: boolean;
  readonly spring: boolean;
}

export interface Interval {
  start: number;
  end: number;
  /** Redis only: when its restart began (before that it was surely down). */
  restartAt?: number;
}

/** What happened during the run, recorded by the traffic and fault loops (times from now()). */
export interface Timeline {
  readonly t0: number;
  readonly end: number;
  readonly gateway: GatewayRecord[];
  readonly redisDown: Interval[];
  readonly upstreamDown: Interval[];
  readonly configChanges: { at: number; spring: boolean }[];
  readonly replicaDown: Interval[];
  /** The faults injected, in order. */
  readonly faults: string[];
}

export const now = () => performance.now();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
export const overlaps = (a: Interval, s: number, e: number) => s <= a.end && e >= a.start;
export const toMiB = (bytes: number | undefined) => Number(((bytes ?? 0) / MiB).toFixed(1));
