// A reload's retain (BucketStore.retain) on Redis: SCAN over every node that holds keys (each
// master on a Cluster), then PEXPIRE ... GT per bucket key, which only ever lengthens a TTL
// (Redis 7). A key the scan misses because it was written during it was written with the new
// limits' TTL already.
import { Cluster, type Redis } from 'ioredis';

/**
 * Lengthens the TTL of every key starting with `head` to at least ttlsMs[i] from now, i being the
 * key's bucket index (`<...>}:<i>`, 0 without a suffix); resolves with the number of keys seen.
 */
export async function retainBuckets(
  client: Redis | Cluster,
  head: string,
  ttlsMs: readonly number[],
): Promise<number> {
  const match = `${head.replace(/[*?[\]\\]/g, '\\$&')}*`;
  const nodes: Redis[] = client instanceof Cluster ? client.nodes('master') : [client];
  let seen = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      cursor = next;
      const pipeline = node.pipeline();
      let queued = 0;
      for (const key of keys) {
        // Bucket i > 0 of a take is `<...>}:<i>` (RedisBucketStore.keyOf).
        const close = key.lastIndexOf('}');
        const ttlMs =
          ttlsMs[close < 0 || close === key.length - 1 ? 0 : Number(key.slice(close + 2))];
        if (ttlMs === undefined) continue;
        pipeline.pexpire(key, ttlMs, 'GT');
        queued++;
      }
      if (queued > 0) await pipeline.exec();
      seen += queued;
    } while (cursor !== '0');
  }
  return seen;
}
