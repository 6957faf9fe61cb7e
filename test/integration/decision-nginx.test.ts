// nginx (Debian's) with auth_request in front of the user service, asking the decision service
// with the server block docs/concepts/gateway.md shows: the specification scenario's 12 x 200 and
// 18 x 429 reach the client with Retry-After, the RateLimit headers and the problem+json body
// (auth_request alone would turn every 429 into a 500), and a request without USER-ID gets 400.
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { startNginx } from '../harness/gateways/gateways.ts';
import { test } from '../harness/fixtures.ts';
import { specRule, specScenario, startDecision, type Answer } from './decision-support.ts';

const it = test.extend('nginx', { scope: 'file' }, async ({ start, userService, redis }) => {
  const decision = await startDecision(start, {
    route: { id: 'all' },
    limiter: { ...specRule },
    redis: { url: redis.url, commandTimeoutMs: 2000 },
  });
  const nginx = await startNginx(decision.port, userService.port);
  start.defer(() => nginx.program.stop());
  return nginx;
});

const get = async (url: string, headers: Record<string, string>): Promise<Answer> => {
  const res = await request(url, { headers });
  return {
    status: res.statusCode,
    headers: res.headers as Record<string, string | undefined>,
    body: await res.body.text(),
  };
};

describe('nginx auth_request in front of the decision service', () => {
  it('the specification scenario: 12 x 200 from the service, 18 x 429 with Retry-After, RateLimit headers and problem+json', async ({
    nginx,
  }) => {
    const answers = await specScenario(() =>
      get(`${nginx.url}/healthcheck/ready`, { 'USER-ID': 'nginx-user' }),
    );
    for (const a of answers.filter((x) => x.status === 200)) expect(a.body).toBe('OK');
  });

  it('no USER-ID: 400 problem+json from the limiter, the service never reached', async ({
    nginx,
  }) => {
    const a = await get(`${nginx.url}/healthcheck/ready`, {});
    expect(a.status).toBe(400);
    expect(a.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(a.body)).toMatchObject({
      status: 400,
      type: 'urn:portcullis:problem:invalid-user-id',
    });
  });
});
