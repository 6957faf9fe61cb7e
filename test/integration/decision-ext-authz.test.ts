// Envoy's external authorization contract, both forms, against the decision service: gRPC Check
// through a client generated from Envoy's published API (go-control-plane, what Envoy Gateway's
// extAuth and Istio's CUSTOM action call), and HTTP ext_authz as Envoy sends it (the original
// method and path, after path_prefix). The specification scenario, the missing key, and the
// headers for upstream (with jwt the verified key) and for the client.
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import {
  checkGrpc,
  specRule,
  specScenario,
  startDecision,
  type Answer,
  type RunningDecision,
} from './decision-support.ts';

const it = test.extend('decision', { scope: 'file' }, ({ start, redis }) =>
  startDecision(start, {
    route: { id: 'all' },
    limiter: { ...specRule },
    redis: { url: redis.url, commandTimeoutMs: 2000 },
  }),
);

describe('gRPC ext_authz (envoy.service.auth.v3.Authorization/Check)', () => {
  it('the specification scenario: 12 OK with the RateLimit headers upstream and downstream, 18 denied 429 with Retry-After and problem+json', async ({
    decision,
  }) => {
    const answers = await specScenario(async (): Promise<Answer> => {
      const [r] = await checkGrpc(decision, [
        '-path',
        '/healthcheck/ready?x=1',
        '-header',
        'user-id=grpc-user',
      ]);
      if (r === undefined || r.error !== undefined) throw new Error(`Check failed: ${r?.error}`);
      if (r.allowed) {
        expect(r.code).toBe(0);
        // The same limiter headers for the upstream request (with the identity charged) and for the client's response.
        expect(r.headers).toEqual({ ...r.responseHeaders, 'user-id': 'grpc-user' });
        return { status: 200, headers: r.headers, body: '' };
      }
      expect(r.code).toBe(8); // RESOURCE_EXHAUSTED
      return { status: r.httpStatus ?? 0, headers: r.headers, body: r.body ?? '' };
    });
    expect(answers.some((a) => a.status === 429)).toBe(true);
  });

  it('no USER-ID: denied with 400 problem+json (INVALID_ARGUMENT)', async ({ decision }) => {
    const [r] = await checkGrpc(decision, ['-path', '/healthcheck/ready']);
    expect(r).toMatchObject({ code: 3, allowed: false, httpStatus: 400 });
    expect(r?.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(r?.body ?? '')).toMatchObject({
      status: 400,
      type: 'urn:portcullis:problem:invalid-user-id',
    });
  });

  it('admitted: the identity charged set upstream, and the look-alikes a CGI upstream reads as USER-ID removed (headers_to_remove)', async ({
    decision,
  }) => {
    const [r] = await checkGrpc(decision, [
      '-path',
      '/orders',
      '-header',
      'user-id=alice',
      '-header',
      'USER_ID=mallory',
    ]);
    expect(r).toMatchObject({ code: 0, allowed: true });
    expect(r?.headers['user-id']).toBe('alice');
    expect(r?.headersToRemove).toEqual(['user_id']);
    // Never the key header itself: Envoy would drop the identity just set.
    expect(r?.headersToRemove).not.toContain('user-id');
  });

  it('a path outside the route: denied 404 problem+json', async ({ start, redis }) => {
    const scoped = await startDecision(
      start,
      {
        route: { id: 'scoped', path: '/api/**' },
        limiter: { ...specRule },
        redis: { url: redis.url },
      },
      'decision-scoped',
    );
    const [r] = await checkGrpc(scoped, ['-path', '/admin', '-header', 'user-id=u']);
    expect(r).toMatchObject({ allowed: false, httpStatus: 404 });
  });
});

describe('HTTP ext_authz (Envoy http_service: the original method and path, after path_prefix)', () => {
  const check = async (
    decision: RunningDecision,
    path: string,
    headers: Record<string, string>,
  ): Promise<Answer> => {
    const res = await request(`${decision.url}${path}`, { method: 'POST', headers });
    return {
      status: res.statusCode,
      headers: res.headers as Record<string, string | undefined>,
      body: await res.body.text(),
    };
  };

  it('admits with 200 and the limiter headers, refuses with the status, headers and body the client gets', async ({
    decision,
  }) => {
    const user = `http-user-${Date.now()}`;
    const answers: Answer[] = [];
    for (let i = 0; i < 6; i++)
      answers.push(await check(decision, '/orders?page=2', { 'user-id': user }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(answers[0]?.headers['ratelimit']).toMatch(/^"default";r=8;t=\d+$/);
    expect(answers[0]?.body).toBe('');
    expect(answers[5]?.headers['retry-after']).toMatch(/^\d+$/);
    expect(JSON.parse(answers[5]?.body ?? '')).toMatchObject({ status: 429 });
  });

  it('admitted: the identity charged set upstream, and the look-alikes named in x-envoy-auth-headers-to-remove', async ({
    decision,
  }) => {
    const a = await check(decision, '/orders', { 'user-id': 'alice', user_id: 'mallory' });
    expect(a.status).toBe(200);
    expect(a.headers['user-id']).toBe('alice');
    expect(a.headers['x-envoy-auth-headers-to-remove']).toBe('user_id');
  });

  it('no USER-ID: 400 problem+json', async ({ decision }) => {
    const a = await check(decision, '/orders', {});
    expect(a.status).toBe(400);
    expect(a.headers['content-type']).toBe('application/problem+json');
  });

  it('removes decision.pathPrefix before the route sees the path', async ({ start }) => {
    const prefixed = await start.sidecar(
      {
        mode: 'decision',
        decision: { pathPrefix: '/authz' },
        route: { id: 'api', path: '/api/**' },
        limiter: { ...specRule },
      },
      { name: 'decision-prefix' },
    );
    expect(
      (await request(`${prefixed.url}/authz/api/x`, { headers: { 'user-id': 'p' } })).statusCode,
    ).toBe(200);
    expect(
      (await request(`${prefixed.url}/authz/admin`, { headers: { 'user-id': 'p' } })).statusCode,
    ).toBe(404);
    // Only a whole segment is the prefix.
    expect(
      (await request(`${prefixed.url}/authzapi/x`, { headers: { 'user-id': 'p' } })).statusCode,
    ).toBe(404);
  });
});
