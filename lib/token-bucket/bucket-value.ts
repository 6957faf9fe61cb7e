// The value of one bucket's Redis key as token-bucket.lua writes it (struct '<i8<i8'): 16 bytes,
// two little-endian signed 64-bit integers, the micro-tokens and the µs time of that state. The
// store itself never reads it (the script does); tests, benches and tooling inspecting Redis do.
import type { BucketState } from './bucket.ts';

/** Bytes of one stored bucket. */
export const BUCKET_VALUE_BYTES = 16;

/** The state in a bucket key's value (GET as a Buffer); undefined when it is not one (the script then counts the bucket full). */
export function decodeBucketValue(value: Buffer | null): BucketState | undefined {
  if (value === null || value.length !== BUCKET_VALUE_BYTES) return undefined;
  const microTokens = Number(value.readBigInt64LE(0));
  const updatedUs = Number(value.readBigInt64LE(8));
  if (!Number.isSafeInteger(microTokens) || !Number.isSafeInteger(updatedUs)) return undefined;
  return { microTokens, updatedUs };
}

/** The value the script would write for `state` (to seed a bucket in a test). */
export function encodeBucketValue(state: BucketState): Buffer {
  const value = Buffer.alloc(BUCKET_VALUE_BYTES);
  value.writeBigInt64LE(BigInt(state.microTokens), 0);
  value.writeBigInt64LE(BigInt(state.updatedUs), 8);
  return value;
}
