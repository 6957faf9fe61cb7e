// Caddy v2.11.9 (built from its Go module) with forward_auth in front of the user service, asking
// the decision service with the site docs/concepts/gateway.md shows: the specification scenario's
// 12 x 200 and 18 x 429 reach the client with Retry-After, the RateLimit headers and the
// problem+json body (forward_auth returns a refusal as it is), no USER-ID gets 400, and the service
// behind reads the one identity charged (copy_headers USER-ID), not every USER-ID line the client sent;
// admitted answers carry the limiter's RateLimit headers to the client too, never ones the client forged.
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { startCaddy } from '../harness/gateways/gateways.ts';
import { test } from '../harness/fixtures.ts';
import { specRule, specScenario, startDecision, type Answer } from './decision-support.ts';

const it = test.extend('caddy', { scope: 'file' }, async ({ start, userService, redis }) => {
  const decision = await startDecision(start, {
    route: { id: 'all' },
    limiter: { ...specRule },
    redis: { url: redis.url, commandTimeoutMs: 2000 },
  });
  const caddy = await startCaddy(decision.port, userService.port);
  start.defer(() => caddy.program.stop());
  return caddy;
});

const get = async (url: string, headers: Record<string, string>): Promise<Answer> => {
  const res = await request(url, { headers });
  return {
    status: res.statusCode,
    headers: res.headers as Record<string, string | undefined>,
    body: await res.body.text(),
  };
};

describe('Caddy forward_auth in front of the decision service', () => {
  it('the specification scenario: 12 x 200 from the service, 18 x 429 with Retry-After, RateLimit headers and problem+json', async ({
    caddy,
  }) => {
    const answers = await specScenario(() =>
      get(`${caddy.url}/healthcheck/ready`, { 'USER-ID': 'caddy-user' }),
    );
    for (const a of answers.filter((x) => x.status === 200)) expect(a.body).toBe('OK');
  });

  it('the service behind reads exactly the identity charged: the first USER-ID, copied from the answer over what the client sent', async ({
    start,
    redis,
  }) => {
    /** USER-ID lines as the service read them, one entry per request. */
    const seen: string[][] = [];
    const service = await start.upstream((req, res) => {
      seen.push(req.headersDistinct['user-id'] ?? []);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('OK');
    });
    const decision = await startDecision(
      start,
      {
        route: { id: 'identity' },
        limiter: { ...specRule },
        redis: { url: redis.url, commandTimeoutMs: 2000 },
      },
      'decision-caddy-identity',
    );
    const caddy = await startCaddy(decision.port, service.port);
    start.defer(() => caddy.program.stop());
    const res = await request(`${caddy.url}/orders`, {
      headers: ['USER-ID', 'alice', 'USER-ID', 'bob'],
    });
    await res.body.text();
    expect(res.statusCode).toBe(200);
    expect(seen).toEqual([['alice']]);
  });

  it("RateLimit headers a client sends never stand in for the limiter's: admitted answers carry the decision's, and so do refusals", async ({
    caddy,
  }) => {
    const forged = {
      'USER-ID': 'caddy-forger',
      RateLimit: '"default";r=99;t=0',
      'RateLimit-Policy': '"default";q=999;w=1',
    };
    const answers: Answer[] = [];
    // A full bucket of 10 at 2 a request: refused after about 5, whatever the machine's pace.
    while (answers.length < 12 && answers.at(-1)?.status !== 429)
      answers.push(await get(`${caddy.url}/healthcheck/ready`, forged));
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(5);
    expect(answers.at(-1)?.status).toBe(429);
    for (const a of answers) {
      expect(a.headers['ratelimit-policy']).toBe('"default";q=10;w=10');
      const remaining = Number(/^"default";r=(\d+);t=\d+$/.exec(a.headers['ratelimit'] ?? '')?.[1]);
      expect(remaining).toBeLessThanOrEqual(8);
      if (a.status === 429) expect(remaining).toBeLessThan(2); // fewer tokens than a request costs
    }
  });

  it('no USER-ID: 400 problem+json from the limiter', async ({ caddy }) => {
    const a = await get(`${caddy.url}/healthcheck/ready`, {});
    expect(a.status).toBe(400);
    expect(a.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(a.body)).toMatchObject({
      status: 400,
      type: 'urn:portcullis:problem:invalid-user-id',
    });
  });
});
