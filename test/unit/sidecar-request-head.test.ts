// The head forwarded upstream (sidecar/request-head.ts): no key header line and no name a CGI/WSGI
// server folds into it leaves with the client's value; the key is the first exact key header line.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { readRequestHead } from '../../sidecar/request-head.ts';

const request = (rawHeaders: string[]) =>
  ({ rawHeaders, socket: { remoteAddress: '10.0.0.1' } }) as unknown as IncomingMessage;
const names = (forward: string[]) =>
  forward.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());

describe('the forwarded request head and the key', () => {
  it('header key: the first USER-ID line is the key; no USER-ID or USER_ID line of any case is forwarded', () => {
    const head = readRequestHead(
      request([
        'Host',
        'svc',
        'user_id',
        'mallory',
        'USER-ID',
        'alice',
        'User-Id',
        'bob',
        'USER_ID',
        'eve',
        'Accept',
        '*/*',
      ]),
      'user-id',
      false,
    );
    expect(head.key).toBe('alice');
    expect(names(head.forward)).toEqual([
      'host',
      'accept',
      'x-forwarded-for',
      'x-forwarded-proto',
      'x-forwarded-host',
      'portcullis-hops',
    ]);
  });

  it('a key header with _ drops its - twin too, and other names of the same length stay', () => {
    const head = readRequestHead(
      request(['x-user', 'mallory', 'X_USER', 'alice', 'x-usex', 'kept']),
      'x_user',
      false,
    );
    expect(head.key).toBe('alice');
    expect(names(head.forward)).toContain('x-usex');
    expect(names(head.forward)).not.toContain('x-user');
    expect(names(head.forward)).not.toContain('x_user');
  });

  it('jwt key: no key, and no client line under the key header or its CGI twin', () => {
    const head = readRequestHead(
      request(['USER-ID', 'mallory', 'user_id', 'mallory', 'Authorization', 'Bearer x']),
      'user-id',
      true,
    );
    expect(head.key).toBeUndefined();
    expect(head.authorization).toBe('Bearer x');
    expect(names(head.forward)).not.toContain('user-id');
    expect(names(head.forward)).not.toContain('user_id');
  });
});
