// The log scanner itself (test/harness/log-scan.ts): it finds tracked secrets and secret-looking
// values, never prints the secret it found, and stays quiet on ordinary log lines.
import { afterEach, describe, expect, it } from 'vitest';
import {
  clearTrackedSecrets,
  scanLines,
  trackAuthorization,
  trackJson,
  trackParams,
  trackSecret,
} from '../harness/log-scan.ts';

const secret = 'Zq8f3KpL0v_2mXcR9tYwA7bN4sD1eG6hJ5uI';
const jwt =
  'eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCJ9.eyJzdWIiOiJhbGljZSIsImp0aSI6IjEyMzQ1Njc4In0.c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJl';

afterEach(() => clearTrackedSecrets());

describe('log scanner', () => {
  it('finds a tracked secret anywhere in a line and masks it in the report', () => {
    trackSecret(secret, 'client secret');
    const findings = scanLines('auth-server', [
      '{"level":30,"msg":"ok"}',
      `{"level":30,"msg":"client authenticated","detail":"x${'-'}${secret}"}`,
    ]);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      program: 'auth-server',
      lineNumber: 2,
      what: 'client secret',
    });
    expect(findings[0]?.excerpt).not.toContain(secret);
  });

  it('tracks secrets from queries, JSON bodies and Basic credentials', () => {
    trackParams(
      new URLSearchParams({ code: 'code-abcdefghijkl', state: 'not-secret-state' }),
      'redirect',
    );
    trackJson(
      { access_token: jwt, nested: { refresh_token: 'rt_0123456789abcdef' } },
      'token response',
    );
    trackAuthorization(
      `Basic ${Buffer.from('demo-client:p%40ss word!').toString('base64')}`,
      'request',
    );
    const lines = [
      'code-abcdefghijkl',
      'state not-secret-state',
      'rt_0123456789abcdef',
      'payload eyJzdWIiOiJhbGljZSIsImp0aSI6IjEyMzQ1Njc4In0 here',
      'pw p@ss word! here',
    ];
    expect(scanLines('p', lines).map((f) => f.lineNumber)).toEqual([1, 3, 4, 5]);
  });

  it('flags secret-looking values nobody tracked: JWTs, credentials in URLs, Authorization values, secret-named JSON fields', () => {
    const lines = [
      `{"msg":"verified","token":"${jwt}"}`,
      '{"req":{"url":"/callback?code=AbCdEfGh123&state=x"}}',
      '{"headers":{"authorization":"Bearer abcdefghijklmnop"}}',
      '{"password":"hunter22"}',
      '{"password":"[Redacted]","msg":"sign-in failed","username":"alice"}',
      '{"msg":"request completed","url":"/healthcheck/ready","statusCode":200,"code":"ECONNREFUSED"}',
    ];
    expect(scanLines('p', lines).map((f) => f.lineNumber)).toEqual([1, 2, 3, 4]);
  });

  it('ignores short values that would match ordinary words', () => {
    trackSecret('abc', 'too short');
    expect(scanLines('p', ['abc abc'])).toEqual([]);
  });
});
