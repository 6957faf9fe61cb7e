// Every bad-key case — missing, empty, over 256 bytes, control character — is a 400 problem+json
// and a debug log line; several USER-ID lines: the first is the key; a user id in the body is never
// read. onMissingKey.status is honoured.
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import { rawRequest } from './sidecar-support.ts';

const get = (headers: string[]) =>
  `GET /healthcheck/ready HTTP/1.1\r\nHost: test\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`;

const it = test
  .extend('common', { scope: 'file' }, ({ userService, redis }) => ({
    upstream: { url: userService.url },
    route: { id: 'all' },
    redis: { url: redis.url, commandTimeoutMs: 2000 },
    logLevel: 'debug' as const,
  }))
  .extend('sidecar', { scope: 'file' }, ({ start, common }) =>
    start.sidecar({
      ...common,
      limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 },
    }),
  )
  .extend('strict', { scope: 'file' }, ({ start, common }) =>
    start.sidecar(
      {
        ...common,
        route: { id: 'strict' },
        limiter: {
          replenishRate: 1,
          burstCapacity: 10,
          requestedTokens: 2,
          onMissingKey: { status: 403 },
        },
      },
      { name: 'sidecar-403' },
    ),
  );

describe('bad USER-ID values', () => {
  const cases: [string, string[], string, string][] = [
    ['missing', [], 'missing', 'The USER-ID header is required'],
    ['empty', ['USER-ID:'], 'empty', 'must not be empty'],
    ['over 256 bytes', [`USER-ID: ${'x'.repeat(257)}`], 'too-long', 'at most 256 bytes'],
    [
      'a control character (tab inside)',
      ['USER-ID: a\tb'],
      'control-character',
      'control characters',
    ],
  ];
  for (const [name, headers, reason, detail] of cases) {
    it(`${name}: 400 problem+json and a debug line`, async ({ sidecar }) => {
      const res = await rawRequest(sidecar.port, get(headers));
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const problem = JSON.parse(res.body) as Record<string, unknown>;
      expect(problem).toMatchObject({
        status: 400,
        title: 'Invalid user id',
        type: 'urn:portcullis:problem:invalid-user-id',
      });
      expect(String(problem.detail)).toContain(detail);
      await sidecar.program.waitForLine(
        new RegExp(`"level":20.*"reason":"${reason}".*request without a valid key`),
      );
    });
  }

  it('other control characters (refused by the HTTP parser itself): still 400 problem+json', async ({
    sidecar,
  }) => {
    for (const value of ['a\x01b', 'a\x1bb', 'a\x7fb']) {
      const res = await rawRequest(sidecar.port, get([`USER-ID: ${value}`]));
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(JSON.parse(res.body)).toMatchObject({ status: 400, title: 'Bad Request' });
    }
    expect(sidecar.program.exited()).toBe(false);
  });

  it('exactly 256 bytes is a valid key', async ({ sidecar }) => {
    const res = await rawRequest(sidecar.port, get([`USER-ID: ${'y'.repeat(256)}`]));
    expect(res.status).toBe(200);
    expect(res.body).toBe('OK');
  });

  it('several USER-ID lines: the first is the key', async ({ sidecar }) => {
    const both = await rawRequest(
      sidecar.port,
      get(['USER-ID: first-user', 'user-id: second-user']),
    );
    expect(both.status).toBe(200);
    expect(both.headers.get('ratelimit-remaining')).toBe('8');
    // first-user's bucket was charged, second-user's was not.
    expect(
      (await rawRequest(sidecar.port, get(['USER-ID: first-user']))).headers.get(
        'ratelimit-remaining',
      ),
    ).toBe('6');
    expect(
      (await rawRequest(sidecar.port, get(['USER-ID: second-user']))).headers.get(
        'ratelimit-remaining',
      ),
    ).toBe('8');
  });

  it('a user id in the body is never read', async ({ sidecar }) => {
    const body = JSON.stringify({ 'USER-ID': 'in-body', userId: 'in-body' });
    const res = await rawRequest(
      sidecar.port,
      `POST /healthcheck/ready HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ status: 400 });
  });

  it('onMissingKey.status selects the status (403 here), still problem+json', async ({
    strict,
  }) => {
    const res = await rawRequest(strict.port, get([]));
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(JSON.parse(res.body)).toMatchObject({ status: 403, title: 'Invalid user id' });
  });
});
