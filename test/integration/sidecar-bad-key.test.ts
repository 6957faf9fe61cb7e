// Issue 2 test 5: every bad-key case — missing, empty, over 256 bytes, control character — is a
// 400 problem+json and a debug log line; several USER-ID lines: the first is the key; a user id in
// the body is never read. onMissingKey.status is honoured.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.ts';
import { rawRequest, startSidecar, startUserService, type RunningSidecar } from './sidecar-support.ts';

const get = (headers: string[]) => `GET /healthcheck/ready HTTP/1.1\r\nHost: test\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`;

describe('bad USER-ID values', () => {
  let redis: RedisServer;
  let user: Awaited<ReturnType<typeof startUserService>>;
  let sidecar: RunningSidecar;
  let strict: RunningSidecar;

  beforeAll(async () => {
    redis = await startRedis();
    user = await startUserService();
    const common = {
      upstream: { url: user.url },
      route: { id: 'all' },
      redis: { url: redis.url, commandTimeoutMs: 2000 },
      logLevel: 'debug' as const,
    };
    sidecar = await startSidecar({ ...common, limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 } });
    strict = await startSidecar({
      ...common,
      name: 'sidecar-403',
      route: { id: 'strict' },
      limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2, onMissingKey: { status: 403 } },
    });
  });
  afterAll(async () => {
    await sidecar?.program.stop();
    await strict?.program.stop();
    await user?.program.stop();
    await redis?.stop();
  });

  const cases: [string, string[], string, string][] = [
    ['missing', [], 'missing', 'The USER-ID header is required'],
    ['empty', ['USER-ID:'], 'empty', 'must not be empty'],
    ['over 256 bytes', [`USER-ID: ${'x'.repeat(257)}`], 'too-long', 'at most 256 bytes'],
    ['a control character (tab inside)', ['USER-ID: a\tb'], 'control-character', 'control characters'],
  ];
  for (const [name, headers, reason, detail] of cases) {
    it(`${name}: 400 problem+json and a debug line`, async () => {
      const res = await rawRequest(sidecar.port, get(headers));
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const problem = JSON.parse(res.body) as Record<string, unknown>;
      expect(problem).toMatchObject({ status: 400, title: 'Invalid user id', type: 'urn:portcullis:problem:invalid-user-id' });
      expect(String(problem.detail)).toContain(detail);
      await sidecar.program.waitForLine(new RegExp(`"level":20.*"reason":"${reason}".*request without a valid key`));
    });
  }

  it('other control characters (refused by the HTTP parser itself): still 400 problem+json', async () => {
    for (const value of ['a\x01b', 'a\x1bb', 'a\x7fb']) {
      const res = await rawRequest(sidecar.port, get([`USER-ID: ${value}`]));
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(JSON.parse(res.body)).toMatchObject({ status: 400, title: 'Bad Request' });
    }
    expect(sidecar.program.exited()).toBe(false);
  });

  it('exactly 256 bytes is a valid key', async () => {
    const res = await rawRequest(sidecar.port, get([`USER-ID: ${'y'.repeat(256)}`]));
    expect(res.status).toBe(200);
    expect(res.body).toBe('OK');
  });

  it('several USER-ID lines: the first is the key', async () => {
    const both = await rawRequest(sidecar.port, get(['USER-ID: first-user', 'user-id: second-user']));
    expect(both.status).toBe(200);
    expect(both.headers.get('ratelimit-remaining')).toBe('8');
    // first-user's bucket was charged, second-user's was not.
    expect((await rawRequest(sidecar.port, get(['USER-ID: first-user']))).headers.get('ratelimit-remaining')).toBe('6');
    expect((await rawRequest(sidecar.port, get(['USER-ID: second-user']))).headers.get('ratelimit-remaining')).toBe('8');
  });

  it('a user id in the body is never read', async () => {
    const body = JSON.stringify({ 'USER-ID': 'in-body', userId: 'in-body' });
    const res = await rawRequest(
      sidecar.port,
      `POST /healthcheck/ready HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ status: 400 });
  });

  it('onMissingKey.status selects the status (403 here), still problem+json', async () => {
    const res = await rawRequest(strict.port, get([]));
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(JSON.parse(res.body)).toMatchObject({ status: 403, title: 'Invalid user id' });
  });
});
