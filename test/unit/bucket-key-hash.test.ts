// Bucket keys hold an HMAC of the take's key (route, rule, client key), never the client key: the
// remembered hashes are exactly the HMAC, per secret, bounded.
import { describe, expect, it } from 'vitest';
import {
  createBucketKeyHasher,
  hashBucketKey,
  keyHashSecretOf,
} from '../../lib/token-bucket/key-hash.ts';

describe('hashed bucket keys', () => {
  it('the remembered hash is the HMAC itself, one per key and secret, and the oldest is forgotten at the bound', () => {
    const hash = createBucketKeyHasher('s1', 2);
    expect(hash('api:ann')).toBe(hashBucketKey('s1', 'api:ann'));
    expect(hash('api:ann')).toBe(hashBucketKey('s1', 'api:ann'));
    expect(hash('api:bea')).not.toBe(hash('api:ann'));
    expect(hashBucketKey('s2', 'api:ann')).not.toBe(hashBucketKey('s1', 'api:ann'));
    expect(hash('api:cid')).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(hash('api:ann')).toBe(hashBucketKey('s1', 'api:ann'));
  });

  it('the secret comes from the Redis password, and is not the password', () => {
    expect(keyHashSecretOf('pw-a')).not.toBe(keyHashSecretOf('pw-b'));
    expect(keyHashSecretOf('pw-a')).not.toContain('pw-a');
    expect(keyHashSecretOf('pw-a')).toBe(keyHashSecretOf('pw-a'));
  });
});
