// The Redis Cluster hash slot of a key (0..16383), as Redis computes it: CRC16 (XMODEM) of the
// key's UTF-8 bytes, or of its hash tag (the bytes between the first `{` and the first `}` after
// it, when that is not empty), modulo 16384. The store groups a turn's takes per slot with it,
// since one script call may only touch keys of one slot. Written here rather than imported from
// ioredis' transitive dependency so the store depends only on what package.json names; an
// integration test holds it to CLUSTER KEYSLOT.

/** Slots in a Redis Cluster. */
export const CLUSTER_SLOTS = 16384;

const table = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  let crc = i << 8;
  for (let b = 0; b < 8; b++)
    crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  table[i] = crc;
}

/** The hash slot of `key`. */
export function keySlot(key: string): number {
  let from = 0;
  let to = key.length;
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) {
      from = open + 1;
      to = close;
    }
  }
  let crc = 0;
  for (let i = from; i < to; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x80) return crc16(Buffer.from(key.slice(from, to), 'utf8')) % CLUSTER_SLOTS;
    crc = ((crc << 8) & 0xffff) ^ (table[((crc >> 8) ^ c) & 0xff] as number);
  }
  return crc % CLUSTER_SLOTS;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes)
    crc = ((crc << 8) & 0xffff) ^ (table[((crc >> 8) ^ byte) & 0xff] as number);
  return crc;
}
