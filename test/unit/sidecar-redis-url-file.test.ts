// redis.urlFile: the Redis URL from a file (a mounted Secret key). The schema keeps it exclusive
// with redis.url and names the field; the file is resolved into the URL the store is built from.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, parseSidecarConfig } from '../../lib/config/sidecar.ts';
import { readRedisUrlFile, resolveRedisConfig } from '../../sidecar/redis-url-file.ts';

const minimal = {
  upstream: { url: 'http://127.0.0.1:8081' },
  route: { id: 'all' },
  limiter: { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 },
};
const dir = mkdtempSync(path.join(tmpdir(), 'redis-url-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('redis.urlFile', () => {
  it('is accepted alone', () => {
    expect(
      parseSidecarConfig({ ...minimal, redis: { urlFile: '/etc/portcullis/redis/url' } }).redis
        ?.urlFile,
    ).toBe('/etc/portcullis/redis/url');
  });

  it('is rejected together with redis.url, with a message naming redis.urlFile', () => {
    expect(() =>
      parseSidecarConfig({ ...minimal, redis: { url: 'redis://a:6379', urlFile: '/x' } }),
    ).toThrow(ConfigError);
    expect(() =>
      parseSidecarConfig({ ...minimal, redis: { url: 'redis://a:6379', urlFile: '/x' } }),
    ).toThrow(/redis\.urlFile: url and urlFile are mutually exclusive/);
  });

  it('is rejected together with sentinel or cluster', () => {
    expect(() =>
      parseSidecarConfig({
        ...minimal,
        redis: { urlFile: '/x', cluster: { nodes: [{ host: 'c', port: 1 }] } },
      }),
    ).toThrow(/exactly one of url \(or urlFile\), sentinel or cluster/);
  });

  it('resolves to the URL the file holds (trailing newline ignored), leaving other settings alone', () => {
    const file = path.join(dir, 'url');
    writeFileSync(file, 'redis://:s3cret@redis-a:6379/0\n');
    const config = parseSidecarConfig({
      ...minimal,
      redis: { urlFile: file, commandTimeoutMs: 30 },
    });
    const resolved = resolveRedisConfig(config.redis);
    expect(resolved).toMatchObject({ url: 'redis://:s3cret@redis-a:6379/0', commandTimeoutMs: 30 });
    expect(resolved).not.toHaveProperty('urlFile');
    expect(resolveRedisConfig(undefined)).toBeUndefined();
  });

  it('refuses a missing file or one without a redis URL, naming the file but never its content', () => {
    expect(() => readRedisUrlFile(path.join(dir, 'missing'))).toThrow(
      /redis\.urlFile: cannot read .*missing: ENOENT/,
    );
    const bad = path.join(dir, 'bad');
    writeFileSync(bad, 'http://user:hunter2@host\n');
    let message = '';
    try {
      readRedisUrlFile(bad);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/does not hold a single redis:\/\/ or rediss:\/\/ URL/);
    expect(message).not.toContain('hunter2');
    writeFileSync(bad, 'redis://a:1 redis://b:2');
    expect(() => readRedisUrlFile(bad)).toThrow(ConfigError);
  });
});
