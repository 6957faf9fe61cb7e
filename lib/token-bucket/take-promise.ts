// BucketStore.take as a promise, for callers off the hot path (the sign-in throttle, the upgrade
// path, tests): the port itself has only the sink form.
import type { BucketRule, Decision } from './bucket.ts';
import type { BucketStore } from './bucket-store.ts';

/** Takes `cost` tokens (default rule.requestedTokens) from the bucket `key`; rejects as the sink would fail. */
export function takeOne(
  store: BucketStore,
  key: string,
  rule: BucketRule,
  cost: number = rule.requestedTokens,
): Promise<Decision> {
  return takeAll(store, key, [rule], [cost]);
}

/** Several limits on one take, atomically (BucketStore.take); `costs` defaults to each rule's requestedTokens. */
export function takeAll(
  store: BucketStore,
  key: string,
  rules: readonly BucketRule[],
  costs: readonly number[] = rules.map((r) => r.requestedTokens),
): Promise<Decision> {
  return new Promise<Decision>((resolve, reject) =>
    store.take(key, rules, costs, { taken: resolve, failed: reject }),
  );
}
