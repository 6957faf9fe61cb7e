// Store latency for the metrics: the same stores, each asynchronous operation timed and its
// failure counted. A decorator chosen in main.ts, so the adapters stay free of metrics and clocks.
// Operations are named `<store>.<method>` (codes.consume, throttle.take): a fixed set.
import type { BucketStore } from '../../../lib/token-bucket/bucket-store.ts';
import type { AuthStores } from './types.ts';

/** Receives one finished operation: its name, duration (s) and whether it succeeded. */
export type StoreCallObserver = (operation: string, seconds: number, ok: boolean) => void;

/**
 * `target` with every method named in `methods` timed: the observer hears of each call once its
 * promise settles (or it throws). Every method runs on `target` itself, timed or not, so class
 * adapters keep their private fields (`#timer` is not readable through a proxy).
 */
export function timeCalls<T extends object>(
  target: T,
  name: string,
  methods: ReadonlySet<string>,
  nowMs: () => number,
  observe: StoreCallObserver,
): T {
  return new Proxy(target, {
    get(obj, prop) {
      const value: unknown = Reflect.get(obj, prop, obj);
      if (typeof value !== 'function') return value;
      if (typeof prop !== 'string' || !methods.has(prop))
        return (...args: unknown[]): unknown => Reflect.apply(value, obj, args);
      const operation = `${name}.${prop}`;
      return (...args: unknown[]): unknown => {
        const start = nowMs();
        const done = (ok: boolean) => observe(operation, (nowMs() - start) / 1000, ok);
        let result: unknown;
        try {
          result = Reflect.apply(value, obj, args);
        } catch (err) {
          done(false);
          throw err;
        }
        if (result instanceof Promise) {
          return result.then(
            (v: unknown) => {
              done(true);
              return v;
            },
            (err: unknown) => {
              done(false);
              throw err;
            },
          );
        }
        done(true);
        return result;
      };
    },
  });
}

/** Every function-valued property of a plain store object. */
const methodsOf = (store: object): ReadonlySet<string> =>
  new Set(Object.keys(store).filter((k) => typeof Reflect.get(store, k) === 'function'));

/** The auth server's stores with every operation timed (close() is not an operation). */
export function timeAuthStores(
  stores: AuthStores,
  nowMs: () => number,
  observe: StoreCallObserver,
): AuthStores {
  const timed = <S extends object>(store: S, name: string) =>
    timeCalls(store, name, methodsOf(store), nowMs, observe);
  return {
    kind: stores.kind,
    interactions: timed(stores.interactions, 'interactions'),
    codes: timed(stores.codes, 'codes'),
    refresh: timed(stores.refresh, 'refresh'),
    revoked: timed(stores.revoked, 'revoked'),
    consents: timed(stores.consents, 'consents'),
    sessions: timed(stores.sessions, 'sessions'),
    close: () => stores.close(),
  };
}

/**
 * The sign-in throttle's bucket store with its takes timed as `throttle.take`: from the call to
 * the sink's answer (the port's take answers through a sink, not a promise).
 */
export function timeBucketStore(
  store: BucketStore,
  nowMs: () => number,
  observe: StoreCallObserver,
): BucketStore {
  const timed: BucketStore = {
    take(key, rules, costs, sink) {
      const start = nowMs();
      const done = (ok: boolean) => observe('throttle.take', (nowMs() - start) / 1000, ok);
      store.take(key, rules, costs, {
        taken(decision) {
          done(true);
          sink.taken(decision);
        },
        failed(err) {
          done(false);
          sink.failed(err);
        },
      });
    },
    ready: () => store.ready(),
    isReady: () => store.isReady(),
    close: () => store.close(),
  };
  if (store.retain !== undefined) {
    const retain = store.retain.bind(store);
    return { ...timed, retain };
  }
  return timed;
}
