// The user service's readiness probe, a fixed contract (the gateway scenarios and the pods' probe
// call it): GET /healthcheck/ready -> 200 text/plain `OK`.
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../services/user-service/app.ts';

describe('user-service readiness probe', () => {
  it('answers 200 text/plain OK', async () => {
    const app = await buildApp();
    const res = await app.inject({ method: 'GET', url: '/healthcheck/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('OK');
    await app.close();
  });
});
