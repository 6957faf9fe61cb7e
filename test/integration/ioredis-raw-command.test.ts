// What lib/token-bucket/ioredis-raw-command.ts assumes of ioredis' internals, held to the installed
// ioredis through a recording proxy in front of a real redis-server: the bytes on the wire are
// exactly the ones the command was given (alone and in a pipeline), the bucket script's EVALSHA is
// byte for byte what ioredis itself would write for the same arguments, a reply decodes to the
// string the take-script parses, an error reply rejects with Redis' message (NOSCRIPT, which the
// retry as EVAL needs), and a command routes by its first key (a Cluster's slot). An ioredis other
// than the one checked fails the first test: check the rest, then bump CHECKED_IOREDIS.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { Command, Redis, type Pipeline } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bucketTtlMs, type BucketRule } from '../../lib/token-bucket/bucket.ts';
import {
  CHECKED_IOREDIS,
  RawCommand,
  sendRaw,
  bulk,
} from '../../lib/token-bucket/ioredis-raw-command.ts';
import { keySlot } from '../../lib/token-bucket/key-slot.ts';
import { callTakeScript } from '../../lib/token-bucket/take-script.ts';
import { startRedis, type RedisServer } from '../harness/redis.ts';

/** A whole command as RESP, from its parts. */
const resp = (...parts: string[]): string => `*${parts.length}\r\n${parts.map(bulk).join('')}`;

describe('the raw ioredis command the bucket script is sent with', () => {
  let redis: RedisServer;
  let proxy: net.Server;
  let client: Redis;
  /** Bytes the client has written towards Redis since the last reset. */
  let written = '';

  beforeAll(async () => {
    redis = await startRedis();
    proxy = net.createServer((inbound) => {
      const outbound = net.connect(redis.port, '127.0.0.1');
      inbound.on('data', (chunk: Buffer) => {
        written += chunk.toString('utf8');
        outbound.write(chunk);
      });
      outbound.pipe(inbound);
      inbound.on('close', () => outbound.destroy());
      outbound.on('close', () => inbound.destroy());
      inbound.on('error', () => {});
      outbound.on('error', () => {});
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as net.AddressInfo;
    client = new Redis({
      host: '127.0.0.1',
      port,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    await new Promise<void>((resolve) => client.once('ready', () => resolve()));
  });
  beforeEach(() => {
    written = '';
  });
  afterAll(async () => {
    client.disconnect();
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
    await redis.stop();
  });

  it(`is checked against the installed ioredis (${CHECKED_IOREDIS})`, () => {
    const installed = (
      JSON.parse(
        readFileSync(new URL('../../node_modules/ioredis/package.json', import.meta.url), 'utf8'),
      ) as { version: string }
    ).version;
    expect(
      installed,
      'ioredis changed: check lib/token-bucket/ioredis-raw-command.ts against it (this file), then bump CHECKED_IOREDIS',
    ).toBe(CHECKED_IOREDIS);
  });

  it('writes exactly the given bytes and answers a bulk reply as a string', async () => {
    const wire = resp('EVAL', "return ARGV[1] .. ' ' .. KEYS[1]", '1', 'raw:{a}', 'hello');
    await expect(sendRaw(client, 'eval', ['x', 1, 'raw:{a}'], wire)).resolves.toBe('hello raw:{a}');
    expect(written).toBe(wire);
  });

  it('writes the commands of a pipeline in one go, each with its own reply', async () => {
    const one = resp('EVAL', 'return ARGV[1]', '0', 'first');
    const two = resp('EVAL', 'return ARGV[1]', '0', 'second');
    // ioredis types pipeline() as a command chain; the store casts it the same way (take-batcher.ts).
    const pipeline = client.pipeline() as Pipeline;
    const replies = [
      sendRaw(pipeline, 'eval', ['x', 0], one),
      sendRaw(pipeline, 'eval', ['x', 0], two),
    ];
    await pipeline.exec();
    await expect(Promise.all(replies)).resolves.toEqual(['first', 'second']);
    expect(written).toBe(one + two);
  });

  it("sends the bucket script's EVALSHA as ioredis would write its arguments, and its reply parses", async () => {
    const script = readFileSync(
      new URL('../../lib/token-bucket/token-bucket.lua', import.meta.url),
      'utf8',
    );
    const sha = createHash('sha1').update(script).digest('hex');
    await client.script('LOAD', script);
    written = '';
    const rule: BucketRule = { replenishRate: 5, burstCapacity: 10, requestedTokens: 1 };
    const key = 'raw:{evalsha}';
    const nowUs = 1_700_000_000_000_000;
    const fields = await callTakeScript(client, [{ key, rules: [rule], costs: [2] }], nowUs);
    // numkeys, the key, now, one group of one bucket: rate, capacity, cost, TTL.
    const args = [
      sha,
      '1',
      key,
      String(nowUs),
      '1',
      '1',
      '5',
      '10',
      '2',
      String(bucketTtlMs(rule)),
    ];
    expect(written).toBe(new Command('EVALSHA', args).toWritable({}));
    // The call's time, then the take: admitted, 8 tokens left (micro-tokens).
    expect(fields).toEqual([String(nowUs), '1', String(8_000_000)]);
  });

  it('rejects with the error reply of Redis (NOSCRIPT for a script it does not hold)', async () => {
    const unknown = '0'.repeat(40);
    const wire = resp('EVALSHA', unknown, '1', 'raw:{a}');
    await expect(sendRaw(client, 'evalsha', [unknown, 1, 'raw:{a}'], wire)).rejects.toThrow(
      /^NOSCRIPT/,
    );
  });

  it('routes by the first key of its route (the Cluster slot of the call)', () => {
    const command = new RawCommand('evalsha', ['sha', 1, 'p:v2:{user-7}'], 'unused');
    expect(command.getKeys()).toEqual(['p:v2:{user-7}']);
    expect(command.getSlot()).toBe(keySlot('p:v2:{user-7}'));
  });
});
