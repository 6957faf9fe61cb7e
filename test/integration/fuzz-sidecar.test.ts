// Hostile input against the real sidecar process, over raw sockets (node:net):
// USER-ID of every shape, huge and many headers, malformed request lines, slow clients sending
// headers byte by byte. The sidecar answers only 2xx (a valid request), 4xx, 408 or 431 — never a
// 5xx, never a hang, never a crash — and its memory stays bounded (RSS of the child sampled).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { starter } from '../harness/fixtures.ts';
import type { RunningSidecar } from '../harness/programs.ts';
import { rawExchange, rssBytes, MiB } from '../harness/raw-http.ts';
import { recordCases, recordRequests } from '../harness/reliability-counts.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 250);
/** The sidecar's listen.headersTimeoutMs in this suite. */
const HEADERS_TIMEOUT_MS = 2000;
/** Node's default max header size (the sidecar keeps it). */
const MAX_HEADER_BYTES = 16 * 1024;

/** Statuses a hostile request may get: success for a valid one, client errors otherwise. */
const acceptable = (status: number | undefined) =>
  status === undefined || (status >= 200 && status < 500);

describe('hostile input against the sidecar', () => {
  const start = starter();
  let sidecar: RunningSidecar;
  let rssStart = 0;
  const rssSamples: number[] = [];

  beforeAll(async () => {
    const redis = await start.redis();
    const user = await start.userService();
    sidecar = await start.sidecar(
      {
        listen: { headersTimeoutMs: HEADERS_TIMEOUT_MS },
        upstream: { url: user.url },
        route: { id: 'fuzz' },
        // Nobody reaches this limit: the oracle below is about keys, not about limiting.
        limiter: { replenishRate: 100_000, burstCapacity: 1_000_000, requestedTokens: 1 },
        redis: { url: redis.url, commandTimeoutMs: 1000 },
        logLevel: 'info',
      },
      { name: 'sidecar-fuzz' },
    );
    // Warm up (JIT, connection pools) before the baseline sample.
    for (let i = 0; i < 200; i++)
      await fetch(`${sidecar.url}/healthcheck/ready`, { headers: { 'USER-ID': `warm-${i}` } }).then(
        (r) => r.text(),
      );
    rssStart = rssBytes(sidecar.program.child.pid as number);
  });

  afterAll(() => start.stopAll());

  const sample = () => rssSamples.push(rssBytes(sidecar.program.child.pid as number));

  /** Requests that declared a body and did not send it all: the sidecar waits for it (see the report). */
  let waitingForBody = 0;
  const send = async (bytes: Buffer, label: string, mayWaitForBody = false) => {
    recordRequests(label, 1);
    const r = await rawExchange(sidecar.port, bytes, { timeoutMs: mayWaitForBody ? 3000 : 10_000 });
    if (r.hung && mayWaitForBody) {
      waitingForBody++;
      return r;
    }
    expect(
      r.hung,
      `no answer and no close within 10 s for ${JSON.stringify(bytes.toString('latin1').slice(0, 200))}`,
    ).toBe(false);
    expect(
      acceptable(r.status),
      `status ${r.status} for ${JSON.stringify(bytes.toString('latin1').slice(0, 200))}`,
    ).toBe(true);
    return r;
  };

  // ---- USER-ID of every shape --------------------------------------------------------------

  /** Bytes llhttp refuses in a header value (controls other than HTAB, and DEL). */
  const forbiddenInValue = (b: number) => (b < 0x20 && b !== 0x09) || b === 0x7f;

  /** What the sidecar must answer for these USER-ID values (no CR or LF inside). */
  function expectedFor(values: readonly Buffer[]): number {
    if (values.some((v) => v.some(forbiddenInValue))) return 400;
    if (values.length === 0) return 400;
    // The parser strips optional whitespace around a value; the first value is the key.
    const key = (values[0] as Buffer).toString('latin1').replace(/^[ \t]+|[ \t]+$/g, '');
    if (key.length === 0 || key.length > 256 || /[\x00-\x1f\x7f]/.test(key)) return 400;
    return 200;
  }

  const byteValue = fc.oneof(
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(
          '',
          ' ',
          '\t',
          '  \t ',
          'alice',
          'ALICE',
          'alice ',
          ' alice',
          'a\tb',
          'x'.repeat(256),
          'x'.repeat(257),
          'ü',
          '日本',
          '\u{1F600}',
        )
        .map((s) => Buffer.from(s, 'utf8')),
    },
    {
      weight: 3,
      arbitrary: fc
        .string({
          unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
          maxLength: 300,
        })
        .map((s) => Buffer.from(s, 'latin1')),
    },
    // Any byte but CR and LF (those end the line; covered by the malformed-request cases).
    {
      weight: 3,
      arbitrary: fc
        .uint8Array({ maxLength: 300 })
        .map((a) => Buffer.from(a.filter((b) => b !== 0x0d && b !== 0x0a))),
    },
    // Invalid UTF-8 on purpose: lone continuation bytes, truncated sequences, overlongs.
    {
      weight: 1,
      arbitrary: fc
        .constantFrom([0x80], [0xc3], [0xe6, 0x97], [0xc0, 0xaf], [0xff, 0xfe], [0xed, 0xa0, 0x80])
        .map((a) => Buffer.from([0x61, ...a, 0x62])),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 257, max: 30_000 }).map((n) => Buffer.alloc(n, 0x6b)),
    },
    {
      weight: 2,
      arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => Buffer.from(s, 'utf8')),
    },
  );
  const headerName = fc.constantFrom(
    'USER-ID',
    'user-id',
    'User-Id',
    'uSeR-iD',
    'USER-ID ',
    'USER_ID',
    'USER-IDx',
  );

  it('USER-ID of every shape: exactly 200 for a valid first value, 400 otherwise, 431 when too big; never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(headerName, byteValue), { maxLength: 50 }),
        async (headers) => {
          recordCases('sidecar fuzz: USER-ID shapes', 1);
          const lines = headers.map(([name, value]) =>
            Buffer.concat([Buffer.from(`${name}:`, 'latin1'), value, Buffer.from('\r\n')]),
          );
          const request = Buffer.concat([
            Buffer.from('GET /healthcheck/ready HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n'),
            ...lines,
            Buffer.from('\r\n'),
          ]);
          const r = await send(request, 'sidecar fuzz: USER-ID shapes');
          // Too big: 431, wherever else the request is wrong (the parser may stop at the size
          // first). Near the limit Node counts header bytes its own way (parsed lengths, without
          // the request line): from 2 KiB under it, 431 or the key's answer are both right.
          if (r.status === 431) {
            expect(
              request.length,
              'a 431 for a request well under the header limit',
            ).toBeGreaterThan(MAX_HEADER_BYTES - 2048);
            return;
          }
          // The valid names: any case of USER-ID. 'USER-ID ' (space before the colon) is malformed.
          if (headers.some(([name]) => name.endsWith(' '))) {
            expect(r.status).toBe(400);
            return;
          }
          const anyForbidden = headers.some(([, v]) => v.some(forbiddenInValue));
          if (request.length > MAX_HEADER_BYTES + 64) {
            // The parser stops at whichever comes first: a forbidden byte (400) or the size (431).
            expect(anyForbidden ? [400, 431] : [431]).toContain(r.status);
            return;
          }
          const keyValues = headers
            .filter(([name]) => name.toLowerCase() === 'user-id')
            .map(([, v]) => v);
          const expected = anyForbidden ? 400 : expectedFor(keyValues);
          expect(
            r.status,
            `headers ${JSON.stringify(headers.map(([n, v]) => [n, v.toString('latin1').slice(0, 60)]))}`,
          ).toBe(expected);
        },
      ),
      { numRuns: RUNS },
    );
    sample();
  });

  // ---- huge and many headers ---------------------------------------------------------------

  it('huge and many headers: 431 (or 400) and a closed connection, never 5xx', async () => {
    const base = 'GET /healthcheck/ready HTTP/1.1\r\nHost: fuzz\r\nUSER-ID: alice\r\n';
    const cases: [string, string][] = [
      ['one 20 KB header', `${base}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
      ['one 1 MB header', `${base}X-Big: ${'a'.repeat(1_000_000)}\r\n\r\n`],
      [
        '3000 small headers',
        `${base}${Array.from({ length: 3000 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`,
      ],
      ['a 20 KB header name', `${base}${'N'.repeat(20_000)}: v\r\n\r\n`],
      [
        'a 20 KB request target',
        `GET /${'p'.repeat(20_000)} HTTP/1.1\r\nHost: fuzz\r\nUSER-ID: alice\r\n\r\n`,
      ],
      [
        '2000 USER-ID lines',
        `GET /healthcheck/ready HTTP/1.1\r\nHost: fuzz\r\n${'USER-ID: a\r\n'.repeat(2000)}\r\n`,
      ],
    ];
    for (const [name, request] of cases) {
      recordCases('sidecar fuzz: huge headers', 1);
      const r = await send(Buffer.from(request, 'latin1'), 'sidecar fuzz: huge headers');
      expect([400, 431], name).toContain(r.status);
      expect(r.closed, name).toBe(true);
    }
    // Under the limit, many headers are fine: 150 headers of 50 bytes.
    const ok = await send(
      Buffer.from(
        `${base}${Array.from({ length: 150 }, (_, i) => `X-H${i}: ${'v'.repeat(40)}\r\n`).join('')}Connection: close\r\n\r\n`,
        'latin1',
      ),
      'sidecar fuzz: huge headers',
    );
    expect(ok.status).toBe(200);
    sample();
  });

  // ---- malformed request lines and framing --------------------------------------------------

  const method = fc.constantFrom(
    'GET',
    'POST',
    'PUT',
    'DELETE',
    'HEAD',
    'OPTIONS',
    'PATCH',
    'CONNECT',
    'TRACE',
    'G@T',
    'get',
    '',
    'GET GET',
    'PRI',
    'X'.repeat(100),
  );
  const target = fc.constantFrom(
    '/healthcheck/ready',
    '/',
    '*',
    'http://evil.example/',
    '//evil.example/x',
    'evil.example:443',
    '/a b',
    '/%00',
    '/%zz',
    '/..%2f..%2fetc/passwd',
    '/\u00ff',
    '/?q=\u0001',
    '',
    '/healthcheck/ready#frag',
    `/${'a'.repeat(5000)}`,
    '/x?'.concat('a=1&'.repeat(500)),
  );
  const version = fc.constantFrom(
    'HTTP/1.1',
    'HTTP/1.0',
    'HTTP/2.0',
    'HTTP/0.9',
    'HTTP/1.1x',
    'http/1.1',
    'HTTP/1',
    '',
    'HTTP/1.1 extra',
  );
  const framing = fc.constantFrom(
    '',
    'Content-Length: 5\r\n',
    'Content-Length: -1\r\n',
    'Content-Length: abc\r\n',
    'Content-Length: 1\r\nContent-Length: 2\r\n',
    'Content-Length: 99999999999999999999\r\n',
    'Transfer-Encoding: chunked\r\nContent-Length: 5\r\n',
    'Transfer-Encoding: chunked\r\n',
    'Transfer-Encoding: gzip\r\n',
    'Transfer-Encoding: chunked, identity\r\n',
    'Expect: 100-continue\r\n',
    'Upgrade: websocket\r\nConnection: Upgrade\r\n',
  );
  const body = fc.constantFrom(
    '',
    'hello',
    '5\r\nhello\r\n0\r\n\r\n',
    'zz\r\nhello\r\n0\r\n\r\n',
    '0\r\n\r\n',
    'ffffffffffffffff\r\n',
  );
  const hostLine = fc.constantFrom(
    'Host: fuzz\r\n',
    '',
    'Host: a\r\nHost: b\r\n',
    'Host: \r\n',
    'Host: evil.example:99999\r\n',
  );
  const lineEnding = fc.constantFrom('\r\n', '\n', '\r');

  it('malformed request lines and framing: a client error or a close, never 5xx or a hang', async () => {
    await fc.assert(
      fc.asyncProperty(
        method,
        target,
        version,
        hostLine,
        framing,
        body,
        lineEnding,
        async (m, t, v, host, frame, b, eol) => {
          recordCases('sidecar fuzz: malformed requests', 1);
          const head = `${m} ${t} ${v}${eol}${host}USER-ID: fuzzer\r\n${frame}Connection: close\r\n\r\n`;
          // A declared body that never fully arrives is the client's to finish: the sidecar has no
          // request-body timeout (requestTimeout 0, for long uploads), so it waits; such requests
          // must not get a 5xx but may stay open. Every other request is answered or closed.
          const declaresBody = /content-length|transfer-encoding/i.test(frame);
          const r = await send(
            Buffer.from(head + b, 'latin1'),
            'sidecar fuzz: malformed requests',
            declaresBody,
          );
          return r.status === undefined || acceptable(r.status);
        },
      ),
      { numRuns: RUNS },
    );
    sample();
  });

  it('requests that declared a body and never sent it were counted (they wait: no request-body timeout)', () => {
    console.log(
      `malformed-request cases still waiting for their declared body after 3 s: ${waitingForBody}`,
    );
    recordCases('sidecar fuzz: declared body never sent (connection left waiting)', waitingForBody);
    expect(sidecar.program.exited()).toBe(false);
  });

  it('random bytes on the wire: a client error or a close, never 5xx or a hang', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 2000 }),
        fc.boolean(),
        async (bytes, withTerminator) => {
          recordCases('sidecar fuzz: random bytes', 1);
          const data = withTerminator
            ? Buffer.concat([Buffer.from(bytes), Buffer.from('\r\n\r\n')])
            : Buffer.from(bytes);
          recordRequests('sidecar fuzz: random bytes', 1);
          const r = await rawExchange(sidecar.port, data, { timeoutMs: HEADERS_TIMEOUT_MS + 5000 });
          // Bytes without a header terminator wait for more; the headers timeout then closes them.
          expect(r.hung).toBe(false);
          expect(acceptable(r.status)).toBe(true);
        },
      ),
      { numRuns: Math.ceil(RUNS / 5) },
    );
    sample();
  });

  // ---- slow clients ------------------------------------------------------------------------

  it(`slow clients sending headers byte by byte are cut with 408 (or a close) within listen.headersTimeoutMs (${HEADERS_TIMEOUT_MS} ms) + the 1 s check interval`, async () => {
    const request = Buffer.from(
      'GET /healthcheck/ready HTTP/1.1\r\nHost: fuzz\r\nUSER-ID: slowloris\r\n',
      'latin1',
    );
    const trickle = Buffer.from('X-Slow: '.concat('a'.repeat(2000)), 'latin1');
    const slow = Array.from({ length: 8 }, () =>
      rawExchange(sidecar.port, request, { chunkSize: 1, delayMs: 50, trickle, timeoutMs: 30_000 }),
    );
    // Meanwhile, well-behaved clients are served.
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${sidecar.url}/healthcheck/ready`, {
        headers: { 'USER-ID': `fast-${i}` },
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    const results = await Promise.all(slow);
    recordCases('sidecar fuzz: slow clients', results.length);
    recordRequests('sidecar fuzz: slow clients', results.length);
    for (const r of results) {
      expect(r.hung).toBe(false);
      expect(r.closed).toBe(true);
      if (r.status !== undefined) expect(r.status).toBe(408);
      // Bound: timeout + check interval (1 s) + a generous margin for a loaded 2-core machine.
      expect(r.ms).toBeLessThan(HEADERS_TIMEOUT_MS + 1000 + 3000);
    }
    // A slow client that does finish its headers in time is served normally.
    recordRequests('sidecar fuzz: slow clients', 1);
    const patient = await rawExchange(
      sidecar.port,
      Buffer.from(
        'GET /healthcheck/ready HTTP/1.1\r\nHost: f\r\nUSER-ID: patient\r\nConnection: close\r\n\r\n',
        'latin1',
      ),
      { chunkSize: 8, delayMs: 20, timeoutMs: 10_000 },
    );
    expect(patient.status).toBe(200);
    sample();
  });

  // ---- regressions found by this suite -----------------------------------------------------

  it('regression: two Host lines are a 400 problem+json (undici refused to forward them and the sidecar answered 502)', async () => {
    const r = await send(
      Buffer.from(
        'GET /healthcheck/ready HTTP/1.1\r\nHost: a\r\nHost: b\r\nUSER-ID: dup\r\nConnection: close\r\n\r\n',
        'latin1',
      ),
      'sidecar fuzz: regressions',
    );
    expect(r.status).toBe(400);
    expect(r.head).toMatch(/content-type: application\/problem\+json/i);
  });

  it('regression: over-large headers get 431 and a headers timeout gets 408 (the clientError handler answered 400 to both)', async () => {
    const big = await send(
      Buffer.from(
        `GET / HTTP/1.1\r\nHost: f\r\nUSER-ID: a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        'latin1',
      ),
      'sidecar fuzz: regressions',
    );
    expect(big.status).toBe(431);
    recordRequests('sidecar fuzz: regressions', 1);
    const slow = await rawExchange(
      sidecar.port,
      Buffer.from('GET / HTTP/1.1\r\nHost: f\r\n', 'latin1'),
      { timeoutMs: 15_000 },
    );
    expect(slow.status).toBe(408);
  });

  it('regression: a client still sending a 4 MB header reads its 431 and sees a clean close, not a reset', async () => {
    // Node's parser reports the overflow again with each further chunk; the sidecar destroyed the
    // socket on the second report, with input unread, and the client's write failed with a reset
    // before it read the 431 (every time at 4 MB, now and then at 1 MB).
    const request = Buffer.from(
      `GET / HTTP/1.1\r\nHost: f\r\nUSER-ID: a\r\nX-Big: ${'a'.repeat(4_000_000)}\r\n\r\n`,
      'latin1',
    );
    for (let i = 0; i < 5; i++) {
      const r = await send(request, 'sidecar fuzz: regressions');
      expect(r.status, `try ${i}`).toBe(431);
      expect(r.error, `try ${i}`).toBeUndefined();
      expect(r.closed, `try ${i}`).toBe(true);
    }
  });

  // ---- memory and liveness -----------------------------------------------------------------

  it('stays alive with bounded memory after the fuzzing and 5000 distinct users', async () => {
    const users = 5000;
    const concurrency = 16;
    let next = 0;
    const worker = async () => {
      while (next < users) {
        const i = next++;
        const res = await fetch(`${sidecar.url}/healthcheck/ready`, {
          headers: { 'USER-ID': `user-${i}-${'z'.repeat(i % 200)}` },
        });
        expect(res.status).toBe(200);
        await res.text();
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    sample();
    const rssEnd = rssBytes(sidecar.program.child.pid as number);
    const peak = Math.max(...rssSamples, rssEnd);
    console.log(
      `sidecar RSS: start ${(rssStart / MiB).toFixed(1)} MiB, peak ${(peak / MiB).toFixed(1)} MiB, end ${(rssEnd / MiB).toFixed(1)} MiB`,
    );
    // With the Redis store the sidecar keeps no per-user state: growth is allocator slack only.
    expect(peak - rssStart).toBeLessThan(96 * MiB);
    expect(sidecar.program.exited()).toBe(false);
    expect(
      (
        await fetch(`http://127.0.0.1:${sidecar.adminPort}/healthz`, {
          signal: AbortSignal.timeout(2000),
        })
      ).status,
    ).toBe(200);
    expect(sidecar.program.lines.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
  });
});
