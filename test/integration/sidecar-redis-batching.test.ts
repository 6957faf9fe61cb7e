// The Redis store sends the takes of one event-loop turn as one script call (the hot path).
// Batched decisions must be exactly those of separate calls: takes of one bucket in a batch see
// each other in arrival order, buckets stay independent, the bound holds, and a failed call fails
// every take in it (the caller's onStoreError policy then applies to each).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { describe, expect } from 'vitest';
import { takeUs, type BucketRule, type BucketState } from '../../lib/token-bucket/bucket.ts';
import { StoreUnavailableError } from '../../lib/token-bucket/bucket-store.ts';
import { decodeBucketValue, encodeBucketValue } from '../../lib/token-bucket/bucket-value.ts';
import { RedisBucketStore, type RedisStoreOptions } from '../../lib/token-bucket/redis-store.ts';
import { test } from '../harness/fixtures.ts';
import { scriptCalls } from '../harness/redis.ts';
import { takeAll, takeOne } from '../../lib/token-bucket/take-promise.ts';

const it = test
  /** Runs body with a ready store on the file's Redis, and closes the store afterwards. */
  .extend(
    'withStore',
    { scope: 'file' },
    ({ redis }) =>
      async (
        options: Omit<RedisStoreOptions, 'url'>,
        body: (store: RedisBucketStore) => Promise<void>,
      ): Promise<void> => {
        const store = new RedisBucketStore({ url: redis.url, ...options });
        await store.ready();
        try {
          await body(store);
        } finally {
          await store.close();
        }
      },
  );

describe('batched takes on Redis', () => {
  it('one script call for the takes of one turn, with exactly the decisions of separate calls', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const rules: Record<string, BucketRule> = {
      a: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 },
      b: { replenishRate: 20, burstCapacity: 20, requestedTokens: 3 },
      c: { replenishRate: 5, burstCapacity: 5, requestedTokens: 5 },
    };
    await withStore({ commandTimeoutMs: 5000 }, async (store) => {
      await takeOne(store, 'warm-up', rules.a as BucketRule); // loads the script (EVAL once, then EVALSHA)
      for (let turn = 0; turn < 6; turn++) {
        // 30 takes in one turn, interleaved over three new buckets with different rules. One call
        // runs at one Redis time and the buckets start full, so the decisions do not depend on it.
        const order = Array.from(
          { length: 30 },
          (_, i) => ['a', 'b', 'c'][(i * 7 + turn) % 3] as string,
        );
        const before = await scriptCalls(admin);
        const got = await Promise.all(
          order.map((k) => takeOne(store, `batch-${turn}-${k}`, rules[k] as BucketRule)),
        );
        expect(await scriptCalls(admin)).toBe(before + 1);
        // The same takes, one after another, through the pure function at one time.
        const states: Record<string, BucketState | undefined> = {};
        order.forEach((k, i) => {
          const rule = rules[k] as BucketRule;
          const pure = takeUs(states[k], rule, 1_795_000_000_000_000, rule.requestedTokens);
          if (pure.decision.allowed) states[k] = pure.state;
          expect(got[i]).toEqual(pure.decision);
        });
        // Every bucket was pushed past its limit, so the order within the call really mattered.
        expect(
          Object.values(states).every((st) => st !== undefined && st.microTokens < 5_000_000),
        ).toBe(true);
      }
    });
  });

  it('close() right after takes of this turn still waiting for their batch decides them instead of failing them', async ({
    redis,
  }) => {
    const store = new RedisBucketStore({ url: redis.url, commandTimeoutMs: 5000 });
    await store.ready();
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 1 };
    const takes = Array.from({ length: 5 }, (_, i) => takeOne(store, `closing-${i}`, rule));
    await store.close();
    expect((await Promise.all(takes)).map((d) => d.allowed)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
  });

  it('takes with the same limits share one group of arguments: keys, the groups once, then one group number per take, none when there is one group', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const a: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 };
    const b: BucketRule = { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 };
    const two = [a, b];
    await withStore({ commandTimeoutMs: 5000 }, async (store) => {
      await takeOne(store, 'warm-up-groups', a);
      const monitor = await admin.monitor();
      const calls: string[][] = [];
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (args[0]?.toLowerCase() === 'evalsha') calls.push(args);
      });
      try {
        // 12 takes of rule a (each through take(), so with arrays of its own), 6 of both limits.
        await Promise.all([
          ...Array.from({ length: 12 }, (_, i) => takeOne(store, `group-a-${i % 4}`, a)),
          ...Array.from({ length: 6 }, (_, i) => takeAll(store, `group-ab-${i % 2}`, two, [2, 3])),
        ]);
        // Then a turn of rule a alone: one group, so no group numbers at all.
        const alone = await Promise.all(
          Array.from({ length: 5 }, () => takeOne(store, 'group-a-alone', a)),
        );
        expect(alone.map((d) => d.allowed)).toEqual([true, true, true, true, true]);
        expect(alone.map((d) => d.remaining)).toEqual([8, 6, 4, 2, 0]);
        await admin.ping(); // the monitor has seen the calls by the time this answers
        await new Promise((r) => setTimeout(r, 50));
      } finally {
        monitor.disconnect();
      }
      expect(calls).toHaveLength(2);
      const args = (calls[0] as string[]).slice(2); // after EVALSHA and its sha: numkeys, keys, ARGV
      const keys = Number(args[0]);
      expect(keys).toBe(12 + 6 * 2);
      const argv = args.slice(1 + keys);
      // now (Redis TIME), 2 groups: [1 bucket: 1 10 2 20000] and [2 buckets: 1 10 2 20000, 20 100 3 10000].
      expect(argv.slice(0, 2)).toEqual(['', '2']);
      expect(argv.slice(2, 2 + 5 + 9)).toEqual([
        '1',
        '1',
        '10',
        '2',
        '20000',
        '2',
        '1',
        '10',
        '2',
        '20000',
        '20',
        '100',
        '3',
        '10000',
      ]);
      expect(argv.slice(16)).toEqual([
        ...Array.from({ length: 12 }, () => '1'),
        ...Array.from({ length: 6 }, () => '2'),
      ]);
      const one = (calls[1] as string[]).slice(2);
      expect(one.slice(0, 1 + 5)).toEqual([
        '5',
        ...Array.from({ length: 5 }, () => 'portcullis:bucket:v2:{group-a-alone}'),
      ]);
      expect(one.slice(6)).toEqual(['', '1', '1', '1', '10', '2', '20000']);
    });
  });

  it('after SCRIPT FLUSH (a Redis that lost its scripts: a restart without persistence, a failover) the next batch is decided, none failed, and buckets keep their state', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 1 };
    await withStore({ commandTimeoutMs: 5000 }, async (store) => {
      const first = await Promise.all(
        Array.from({ length: 6 }, () => takeOne(store, 'flushed', rule)),
      );
      expect(first.map((d) => d.allowed)).toEqual(Array(6).fill(true));
      for (let round = 0; round < 2; round++) {
        await admin.script('FLUSH');
        const evals = await scriptCalls(admin, 'eval');
        // EVALSHA on the same connection now gets NOSCRIPT; the store must send the script again.
        const results = await Promise.allSettled(
          Array.from({ length: 4 }, () => takeOne(store, 'flushed', rule)),
        );
        expect(await scriptCalls(admin, 'eval')).toBe(evals + 1);
        expect(results.map((r) => r.status)).toEqual(Array(4).fill('fulfilled'));
        const allowed = results.filter((r) => r.status === 'fulfilled' && r.value.allowed).length;
        // 10 tokens: 6 taken before, so 4 of the first 4 after the flush and none of the next 4
        // (well under one token refills while the test runs).
        expect(allowed).toBe(round === 0 ? 4 : 0);
      }
    });
  });

  it('splits a turn larger than maxBatch and still admits exactly the burst', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 50, requestedTokens: 1 };
    await withStore({ commandTimeoutMs: 5000, maxBatch: 16 }, async (store) => {
      await takeOne(store, 'warm-up-2', rule);
      const before = await scriptCalls(admin);
      const decisions = await Promise.all(
        Array.from({ length: 80 }, () => takeOne(store, 'split', rule)),
      );
      expect(await scriptCalls(admin)).toBe(before + 5); // 80 takes / 16 per call
      // 50 tokens, at most a fraction of one refilled while the calls ran.
      expect(decisions.filter((d) => d.allowed).length).toBe(50);
    });
  });

  it('maxBatch 1 sends one call per take, the calls of one tick in one write', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const rule: BucketRule = { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 };
    await withStore({ commandTimeoutMs: 5000, maxBatch: 1 }, async (store) => {
      await takeOne(store, 'warm-up-3', rule);
      const before = await scriptCalls(admin);
      const stream = (store.client as Redis).stream;
      const write = stream.write;
      let writes = 0;
      stream.write = function (this: typeof stream, ...args: Parameters<typeof write>) {
        writes++;
        return write.apply(this, args);
      } as typeof write;
      try {
        const decisions = await Promise.all(
          Array.from({ length: 12 }, (_, i) => takeOne(store, `single-${i}`, rule)),
        );
        expect(decisions.every((d) => d.allowed && d.remaining === 99)).toBe(true);
      } finally {
        stream.write = write;
      }
      expect(await scriptCalls(admin)).toBe(before + 12);
      expect(writes).toBe(1);
    });
  });

  it('a failed call rejects every take of its batch with StoreUnavailableError', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 1 };
    await withStore({ commandTimeoutMs: 300 }, async (store) => {
      const pid = Number(/process_id:(\d+)/.exec(await admin.info('server'))?.[1]);
      expect(pid).toBeGreaterThan(0);
      process.kill(pid, 'SIGSTOP'); // frozen, connections open: the call times out
      try {
        const results = await Promise.allSettled(
          Array.from({ length: 10 }, (_, i) => takeOne(store, `stalled-${i}`, rule)),
        );
        expect(
          results.map((r) => r.status === 'rejected' && r.reason instanceof StoreUnavailableError),
        ).toEqual(Array(10).fill(true));
      } finally {
        process.kill(pid, 'SIGCONT');
      }
    });
  });
  it('take settles each sink exactly once, after the call (never before take returns), in one script call per turn', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 4, requestedTokens: 1 };
    await withStore({ commandTimeoutMs: 5000 }, async (store) => {
      await takeOne(store, 'warm-up-4', rule);
      const before = await scriptCalls(admin);
      const outcomes: string[][] = Array.from({ length: 6 }, () => []);
      const settled = Promise.all(
        outcomes.map(
          (log, i) =>
            new Promise<void>((resolve) => {
              store.take('sink-one', [rule], [1], {
                taken: (d) => {
                  log.push(d.allowed ? `allowed ${d.remaining}` : 'limited');
                  resolve();
                },
                failed: (err) => {
                  log.push(`failed ${err.message}`);
                  resolve();
                },
              });
              expect(log, `take ${i} settled before take returned`).toEqual([]);
            }),
        ),
      );
      await settled;
      await new Promise((r) => setTimeout(r, 50)); // a second settlement would land by now
      expect(outcomes).toEqual([
        ['allowed 3'],
        ['allowed 2'],
        ['allowed 1'],
        ['allowed 0'],
        ['limited'],
        ['limited'],
      ]);
      expect(await scriptCalls(admin)).toBe(before + 1);
    });
  });

  it('a stalled call fails at the command timeout, its late reply settles nothing, and calls after it are timed from their own start', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 4, requestedTokens: 1 };
    await withStore({ commandTimeoutMs: 300 }, async (store) => {
      await takeOne(store, 'warm-up-late', rule);
      const pid = Number(/process_id:(\d+)/.exec(await admin.info('server'))?.[1]);
      expect(pid).toBeGreaterThan(0);
      const settlements: { take: string; how: string; ms: number }[] = [];
      const t0 = performance.now();
      const ask = (take: string) =>
        new Promise<void>((resolve) =>
          store.take(take, [rule], [1], {
            taken: () => {
              settlements.push({ take, how: 'taken', ms: performance.now() - t0 });
              resolve();
            },
            failed: (err) => {
              settlements.push({
                take,
                how: err instanceof StoreUnavailableError ? 'unavailable' : err.message,
                ms: performance.now() - t0,
              });
              resolve();
            },
          }),
        );
      process.kill(pid, 'SIGSTOP');
      let resumed = false;
      try {
        const first = ask('late-1');
        // A second call 150 ms later: its own deadline is 150 ms after the first one's.
        await new Promise((r) => setTimeout(r, 150));
        const second = ask('late-2');
        await Promise.all([first, second]);
        process.kill(pid, 'SIGCONT');
        resumed = true;
        // Redis now answers both calls: a second settlement would land by then.
        await takeOne(store, 'after-resume', rule);
        await new Promise((r) => setTimeout(r, 50));
      } finally {
        if (!resumed) process.kill(pid, 'SIGCONT');
      }
      expect(settlements.map((s) => `${s.take} ${s.how}`)).toEqual([
        'late-1 unavailable',
        'late-2 unavailable',
      ]);
      const [one, two] = settlements.map((s) => s.ms) as [number, number];
      expect(one).toBeGreaterThanOrEqual(290);
      expect(two - one).toBeGreaterThanOrEqual(100);
    });
  });

  it('close() with Redis stalled returns after about the command timeout instead of waiting for QUIT', async ({
    redis,
    redisAdmin: admin,
  }) => {
    const store = new RedisBucketStore({ url: redis.url, commandTimeoutMs: 300 });
    await store.ready();
    const pid = Number(/process_id:(\d+)/.exec(await admin.info('server'))?.[1]);
    process.kill(pid, 'SIGSTOP');
    try {
      const t0 = performance.now();
      const closed = await Promise.race([
        store.close().then(() => 'closed'),
        new Promise((r) => setTimeout(() => r('still waiting'), 1500)),
      ]);
      expect(closed).toBe('closed');
      expect(performance.now() - t0).toBeGreaterThanOrEqual(250);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  });

  it('take reports an invalid rule to failed() without calling Redis, and a stalled Redis to failed() with StoreUnavailableError', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 4, requestedTokens: 1 };
    await withStore({ commandTimeoutMs: 300 }, async (store) => {
      await takeOne(store, 'warm-up-5', rule);
      const before = await scriptCalls(admin);
      const invalid: unknown[] = [];
      store.take('sink-invalid', [rule], [5], {
        taken: (d) => invalid.push(d),
        failed: (err) => invalid.push(err),
      });
      expect(invalid).toHaveLength(1);
      expect(invalid[0]).toBeInstanceOf(RangeError);
      expect(await scriptCalls(admin)).toBe(before);

      const pid = Number(/process_id:(\d+)/.exec(await admin.info('server'))?.[1]);
      process.kill(pid, 'SIGSTOP');
      try {
        const err = await new Promise<unknown>((resolve) =>
          store.take('sink-stalled', [rule], [1], { taken: resolve, failed: resolve }),
        );
        expect(err).toBeInstanceOf(StoreUnavailableError);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
    });
  });

  it('the script refuses a call whose arguments do not match its keys, and writes nothing; a refused take writes nothing either', async ({
    redisAdmin: admin,
  }) => {
    const script = readFileSync(
      new URL('../../lib/token-bucket/token-bucket.lua', import.meta.url),
      'utf8',
    );
    const key = 'portcullis:bucket:v2:{malformed}';
    const seeded = encodeBucketValue({ microTokens: 5_000_000, updatedUs: 1_795_000_000_000_000 });
    await admin.set(key, seeded);
    // Arguments: now, the group count, each group (bucket count, then rate, capacity, cost, TTL per
    // bucket), then each take's group. Two keys but one take of one bucket: refused before it runs.
    await expect(
      admin.eval(script, 2, key, key, '', '1', '1', '1', '10', '1', '60000', '1'),
    ).rejects.toThrow(/arguments do not match the keys \(8 arguments for 2 keys\)/);
    // A take of a group that does not exist, a group count that is not a number, a group cut short.
    await expect(
      admin.eval(script, 1, key, '', '1', '1', '1', '10', '1', '60000', '2'),
    ).rejects.toThrow(/arguments do not match the keys/);
    await expect(
      admin.eval(script, 1, key, '', 'x', '1', '1', '10', '1', '60000', '1'),
    ).rejects.toThrow(/arguments do not match the keys/);
    await expect(
      admin.eval(script, 1, key, '', '1', '2', '1', '10', '1', '60000', '1'),
    ).rejects.toThrow(/arguments do not match the keys/);
    // Without per-take group numbers every take is of the only group: the keys must then be whole
    // takes of it (three keys for takes of two buckets are not), and two groups must be numbered.
    await expect(
      admin.eval(
        script,
        3,
        key,
        key,
        key,
        '',
        '1',
        '2',
        '1',
        '10',
        '1',
        '60000',
        '1',
        '10',
        '1',
        '60000',
      ),
    ).rejects.toThrow(/arguments do not match the keys/);
    await expect(
      admin.eval(
        script,
        1,
        key,
        '',
        '2',
        '1',
        '1',
        '10',
        '1',
        '60000',
        '1',
        '1',
        '10',
        '1',
        '60000',
      ),
    ).rejects.toThrow(/arguments do not match the keys/);
    // A group number is the decimal the client sends, not any string Lua would read as that number.
    await expect(
      admin.eval(script, 1, key, '', '1', '1', '1', '10', '1', '60000', '01'),
    ).rejects.toThrow(/arguments do not match the keys/);
    expect(await admin.getBuffer(key)).toEqual(seeded);
    // The same call well formed takes twice and answers its time, then allowed and micro-tokens per take, in one string.
    const reply = await admin.eval(
      script,
      2,
      key,
      key,
      '1795000000000000',
      '1',
      '1',
      '1',
      '10',
      '1',
      '60000',
      '1',
      '1',
    );
    expect(typeof reply).toBe('string');
    expect((reply as string).split(' ')).toEqual([
      '1795000000000000',
      '1',
      '4000000',
      '1',
      '3000000',
    ]);
    expect(decodeBucketValue(await admin.getBuffer(key))).toEqual({
      microTokens: 3_000_000,
      updatedUs: 1_795_000_000_000_000,
    });
    // The same two takes with the group numbers left out (one group): the same decisions, two more tokens gone.
    const implicit = await admin.eval(
      script,
      2,
      key,
      key,
      '1795000000000000',
      '1',
      '1',
      '1',
      '10',
      '1',
      '60000',
    );
    expect((implicit as string).split(' ')).toEqual([
      '1795000000000000',
      '1',
      '2000000',
      '1',
      '1000000',
    ]);
    await admin.set(
      key,
      encodeBucketValue({ microTokens: 3_000_000, updatedUs: 1_795_000_000_000_000 }),
    );
    // A take the bucket cannot pay is refused and writes nothing: value and TTL stay as they were.
    await admin.pexpire(key, 50_000);
    const refused = await admin.eval(
      script,
      1,
      key,
      '1795000000000000',
      '1',
      '1',
      '1',
      '10',
      '4',
      '60000',
      '1',
    );
    expect((refused as string).split(' ')).toEqual(['1795000000000000', '0', '3000000']);
    // A call of more keys than one MGET takes reads each with GET, and still sees its own writes.
    const many = 9000; // more than unpack() can spread onto Lua's stack
    const manyKey = 'portcullis:bucket:v2:{malformed-many}';
    const manyReply = await admin.eval(
      script,
      many,
      ...Array.from({ length: many }, () => manyKey),
      '1795000000000000',
      '1',
      '1',
      '1',
      '3',
      '1',
      '60000',
    );
    const manyFields = (manyReply as string).split(' ');
    expect(manyFields).toHaveLength(1 + 2 * many);
    expect(manyFields.slice(1, 9)).toEqual(['1', '2000000', '1', '1000000', '1', '0', '0', '0']);
    expect(manyFields.filter((f, i) => i % 2 === 1 && f === '1')).toHaveLength(3);
    expect(decodeBucketValue(await admin.getBuffer(key))).toEqual({
      microTokens: 3_000_000,
      updatedUs: 1_795_000_000_000_000,
    });
    expect(await admin.pttl(key)).toBeLessThanOrEqual(50_000);
  });
});
