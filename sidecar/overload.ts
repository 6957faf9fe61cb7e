// The sidecar's own overload, kept apart from the store's health: a busy process is not a Redis
// outage. It counts the limiter decisions awaited at once and samples the event loop's lag while
// any is awaited (no timer while idle); past either bound a request is shed (503 + Retry-After,
// counted as `overloaded`) instead of being asked of the store or forwarded unasked.
// It also stops reading a connection while a request of it awaits its decision and a later one
// was already parsed (pipelining): node:http parses every request of a chunk it reads at once,
// so without this one connection could queue any number of takes and responses.
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** How often the loop's lag is sampled while decisions are awaited, ms. */
export const LAG_SAMPLE_MS = 50;

export interface OverloadBounds {
  /** Decisions awaited at once at most; 0: no bound. */
  readonly maxPendingTakes: number;
  /** Event-loop lag at most, ms; 0: no bound. */
  readonly maxEventLoopLagMs: number;
}

/** Why a request is shed: too many decisions awaited, or the event loop too late. */
export type OverloadReason = 'pending_takes' | 'event_loop_lag';

/** The count of a connection's requests awaiting a decision, kept on its socket. */
const kAwaiting = Symbol('portcullis.awaiting');
/** Set while this module stopped reading the socket. */
const kStopped = Symbol('portcullis.stopped');

interface TrackedSocket extends Socket {
  [kAwaiting]?: number;
  [kStopped]?: boolean;
}

/**
 * The libuv stream under a socket. node:http's parser reads it directly, and node:http resumes a
 * paused socket whenever a response finishes, so reading is stopped and started on the handle
 * itself; its `reading` flag is left as it is, so that node:http's own pause and resume (which
 * set it) keep working as before.
 */
interface StreamHandle {
  readStop(): number;
  readStart(): number;
}

function handleOf(socket: Socket): StreamHandle | undefined {
  const handle = (socket as unknown as { _handle?: Partial<StreamHandle> | null })._handle;
  return handle !== undefined &&
    handle !== null &&
    typeof handle.readStop === 'function' &&
    typeof handle.readStart === 'function'
    ? (handle as StreamHandle)
    : undefined;
}

export class OverloadGuard {
  #pending = 0;
  #lagMs = 0;
  #timer: NodeJS.Timeout | undefined;
  /** performance.now() the sampling timer is due at. */
  #due = 0;

  /** Decisions awaited now. */
  get pendingTakes(): number {
    return this.#pending;
  }

  /** The event loop's lag at the last sample, ms (0 while nothing is awaited). */
  get lagMs(): number {
    return this.#lagMs;
  }

  /** Why to shed a request now, or undefined. */
  shed(bounds: OverloadBounds): OverloadReason | undefined {
    if (bounds.maxPendingTakes > 0 && this.#pending >= bounds.maxPendingTakes)
      return 'pending_takes';
    if (bounds.maxEventLoopLagMs > 0 && this.#lagMs > bounds.maxEventLoopLagMs)
      return 'event_loop_lag';
    return undefined;
  }

  /** A request of `socket` (none: a gRPC check) awaits its decision from now on. */
  started(socket: Socket | undefined): void {
    if (this.#pending++ === 0 && this.#timer === undefined) this.#arm();
    if (socket === undefined) return;
    const s = socket as TrackedSocket;
    const awaiting = (s[kAwaiting] ?? 0) + 1;
    s[kAwaiting] = awaiting;
    // A second request parsed while the first still waits: read no further.
    if (awaiting === 2 && s[kStopped] !== true) {
      const handle = handleOf(s);
      if (handle !== undefined) {
        handle.readStop();
        s[kStopped] = true;
      }
    }
  }

  /** A request of `socket` has its decision (or failed to get one). */
  settled(socket: Socket | undefined): void {
    this.#pending--;
    if (socket === undefined) return;
    const s = socket as TrackedSocket;
    const awaiting = (s[kAwaiting] ?? 1) - 1;
    s[kAwaiting] = awaiting;
    if (awaiting === 0 && s[kStopped] === true) {
      s[kStopped] = false;
      // node:http may have paused the connection itself meanwhile (responses queued past the
      // socket's high-water mark: it pauses its parser too); it starts reading again once they
      // drain, and data read before that would hit the paused parser.
      if (!s.destroyed && (s as { _paused?: boolean })._paused !== true) handleOf(s)?.readStart();
    }
  }

  #arm(): void {
    this.#due = performance.now() + LAG_SAMPLE_MS;
    this.#timer = setTimeout(this.#sample, LAG_SAMPLE_MS);
    this.#timer.unref();
  }

  readonly #sample = (): void => {
    this.#timer = undefined;
    if (this.#pending === 0) {
      // Nothing awaited: an idle loop has no lag worth shedding for, and needs no timer.
      this.#lagMs = 0;
      return;
    }
    this.#lagMs = Math.max(0, performance.now() - this.#due);
    this.#arm();
  };

  /** Stops sampling (shutdown). */
  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
