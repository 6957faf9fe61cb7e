// `redis.urlFile`: the Redis URL read from a file (a mounted Secret key, since a URL with a
// password does not belong in a ConfigMap). Resolved into `redis.url` before the store is built,
// so a changed file (kubelet rewrites a mounted Secret on rotation) compares like a changed URL.
// The URL may carry a password: it is never logged, and errors name the file, not its content.
import { readFileSync } from 'node:fs';
import { ConfigError, REDIS_URL, type RedisConfig } from '../lib/config/sidecar.ts';

/** Reads and checks the URL in `file` (surrounding whitespace, e.g. a final newline, ignored). */
export function readRedisUrlFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `redis.urlFile: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  const url = text.trim();
  if (!REDIS_URL.test(url) || /\s/.test(url))
    throw new ConfigError(
      `redis.urlFile: ${file} does not hold a single redis:// or rediss:// URL`,
    );
  return url;
}

/** The redis config the store is built from: `urlFile` replaced by the URL the file holds now. */
export function resolveRedisConfig(redis: RedisConfig | undefined): RedisConfig | undefined {
  if (redis?.urlFile === undefined) return redis;
  const { urlFile, ...rest } = redis;
  return { ...rest, url: readRedisUrlFile(urlFile) };
}
