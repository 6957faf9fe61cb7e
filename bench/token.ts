// Token endpoint benchmark: authorization-code exchanges per second, Portcullis' auth
// server against oidc-provider set up the same way (code + PKCE S256, client_secret_basic, scope
// openid: an RFC 9068 access token and an id_token signed ES256, a refresh token issued with each
// exchange, in-memory stores on both).
// Codes are minted beforehand through each server's real flow (GET /auth, sign-in, consent once),
// so what is measured is the exchange alone: POST /token with Basic client auth, code, redirect_uri
// and code_verifier; the sign-in's scrypt (and its cost parameters) does not enter the figure.
// Each round mints BENCH_CODES (1000) codes per server, then bench/loadgen sends every exchange once
// over 16 keep-alive connections; rounds interleave the two servers; medians and per-round ratios.
// Portcullis runs as deployed: its bundle with the V8 caps the operator renders for the default
// resources (BENCH_AUTH_NODE_OPTIONS replaces those caps, to compare others).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import { hashPassword } from '../lib/config/auth-server.ts';
import { freePort } from '../test/harness/ports.ts';
import { startProgram } from '../test/harness/programs.ts';
import { authorize, browser, type Browserish } from '../test/harness/auth-flow.ts';
import {
  AUDIENCE,
  AUTH_SERVER_AS_DEPLOYED,
  SECRETS,
  startStack,
} from '../test/harness/auth-stack.ts';
import { cpuUs, median, peakRssMiB } from './lib/measure.ts';
import { ensureLoadgen, runList, type LoadgenResult } from './lib/loadgen.ts';
import {
  exchangeFile,
  inspectToken,
  MINT_CONCURRENCY,
  oidcProviderCode,
  pkce,
  pool,
  SCOPE,
  type Minted,
} from './token-codes.ts';
import type { TokenBenchResult, TokenServerResult } from './token-report.ts';

export async function runTokenBench(
  log: (line: string) => void = console.log,
): Promise<TokenBenchResult> {
  ensureLoadgen();
  const codesPerRound = Number(process.env['BENCH_CODES'] ?? 1000);
  const rounds = Number(process.env['BENCH_ROUNDS'] ?? 3);
  const connections = 16;
  const startedAt = new Date().toISOString();
  const loadavgAtStart = os.loadavg();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-token-bench-'));
  const redirectUri = 'http://127.0.0.1:1/callback';

  // Portcullis: the test stack's fixture clients, a users file with a cheap scrypt (ln=10, the
  // lowest the server accepts) so minting is quick, codes living long enough to mint a round.
  const usersFile = path.join(dir, 'users.json');
  writeFileSync(
    usersFile,
    JSON.stringify({
      users: [
        {
          username: 'alice',
          password_hash: await hashPassword('wonderland', { ln: 10, r: 8, p: 1 }),
          profile: { name: 'Alice' },
        },
      ],
    }),
  );
  const stack = await startStack({
    authEnv: {
      ...(process.env['BENCH_AUTH_NODE_OPTIONS'] === undefined
        ? {}
        : { NODE_OPTIONS: process.env['BENCH_AUTH_NODE_OPTIONS'] }),
      AUTH_USERS_FILE: usersFile,
      AUTH_CODE_TTL_SECONDS: '600',
      LOG_LEVEL: 'warn',
      AUTH_SIGNIN_USER_BURST: '1000000',
      AUTH_SIGNIN_USER_ADDRESS_BURST: '1000000',
      AUTH_SIGNIN_ADDRESS_BURST: '1000000',
    },
  });
  const portcullisPid = stack.programs[0]?.child.pid;

  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), alg: 'ES256', use: 'sig', kid: 'bench-es256' };
  const opPort = await freePort();
  const opIssuer = `http://127.0.0.1:${opPort}`;
  const op = await startProgram({
    entry: 'bench/peers/oidc-provider-peer.ts',
    name: 'bench-oidc-provider',
    waitPort: opPort,
    env: {
      PORT: String(opPort),
      ISSUER: opIssuer,
      CLIENT_ID: 'oidc-client',
      CLIENT_SECRET: SECRETS.oidc,
      REDIRECT_URI: redirectUri,
      AUDIENCE,
      SIGNING_JWK: JSON.stringify(jwk),
      CODE_TTL_SECONDS: '600',
    },
  });

  const servers = [
    {
      name: 'portcullis',
      description: `Portcullis auth server as deployed (bundle, ${process.env['BENCH_AUTH_NODE_OPTIONS'] ?? AUTH_SERVER_AS_DEPLOYED.env.NODE_OPTIONS}; memory store)`,
      issuer: stack.issuer,
      pid: portcullisPid,
      mint: async (b: Browserish): Promise<Minted> => {
        const { verifier, challenge } = pkce();
        const { location } = await authorize({
          issuer: stack.issuer,
          clientId: 'oidc-client',
          redirectUri,
          scope: SCOPE,
          challenge,
          state: randomBytes(8).toString('hex'),
          b,
        });
        const code = location.searchParams.get('code');
        if (code === null) throw new Error(`portcullis flow ended without a code: ${location}`);
        return { code, verifier };
      },
    },
    {
      name: 'oidc-provider',
      description: 'oidc-provider 9 (memory adapter)',
      issuer: opIssuer,
      pid: op.child.pid,
      mint: (b: Browserish) => oidcProviderCode(opIssuer, 'oidc-client', redirectUri, b),
    },
  ];
  const results = new Map<string, { lg: LoadgenResult; cpuUsPerExchange: number }[]>(
    servers.map((s) => [s.name, []]),
  );
  const inspected = new Map<string, TokenServerResult['accessToken']>();
  const rss = new Map<string, number>();
  try {
    for (const s of servers) {
      const b = browser();
      await s.mint(b); // consent given once
      inspected.set(
        s.name,
        await inspectToken(s.issuer, await s.mint(b), 'oidc-client', SECRETS.oidc, redirectUri),
      );
      // Warm-up: 100 exchanges.
      const warm = await pool(100, MINT_CONCURRENCY, () => s.mint(b));
      await runList({
        baseUrl: s.issuer,
        file: exchangeFile(dir, `${s.name}-warm`, warm, 'oidc-client', SECRETS.oidc, redirectUri),
        connections,
      });
    }
    for (let round = 1; round <= rounds; round++) {
      for (const s of servers) {
        const b = browser();
        await s.mint(b);
        const t0 = performance.now();
        const codes = await pool(codesPerRound, MINT_CONCURRENCY, () => s.mint(b));
        const file = exchangeFile(
          dir,
          `${s.name}-${round}`,
          codes,
          'oidc-client',
          SECRETS.oidc,
          redirectUri,
        );
        const before = cpuUs(s.pid);
        const lg = await runList({ baseUrl: s.issuer, file, connections });
        const cpuUsPerExchange =
          Math.round(((cpuUs(s.pid) - before) / Math.max(1, lg.completed)) * 10) / 10;
        results.get(s.name)?.push({ lg, cpuUsPerExchange });
        const failures = lg.errors + lg.completed - (lg.statuses['200'] ?? 0);
        log(
          `  round ${round} ${s.name}: minted ${codesPerRound} codes in ${Math.round(performance.now() - t0)} ms; ` +
            `${Math.round(((lg.statuses['200'] ?? 0) * 1e6) / Math.max(1, lg.elapsedUs))} exchanges/s, p50 ${lg.latencyUs.p50 / 1000} ms, p99 ${lg.latencyUs.p99 / 1000} ms, ${cpuUsPerExchange} µs CPU/exchange, ${failures} failed` +
            (failures > 0 ? ` (${lg.firstError ?? lg.sampleNon2xxBody ?? ''})` : ''),
        );
      }
    }
  } finally {
    for (const s of servers) rss.set(s.name, peakRssMiB(s.pid));
    await op.stop();
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const ms = (us: number) => Math.round(us) / 1000;
  // Only successful exchanges count: a failed one (e.g. an evicted code) is cheaper than a real one.
  const okRate = (l: LoadgenResult) => ((l.statuses['200'] ?? 0) * 1e6) / Math.max(1, l.elapsedUs);
  const out: TokenServerResult[] = servers.map((s) => {
    const rs = results.get(s.name) ?? [];
    const mid = [...rs].sort((a, b) => okRate(a.lg) - okRate(b.lg))[Math.floor(rs.length / 2)];
    return {
      name: s.name,
      description: s.description,
      exchangesPerSecond: Math.round(median(rs.map((r) => okRate(r.lg)))),
      latencyMs:
        mid === undefined
          ? { p50: 0, p99: 0, p999: 0 }
          : {
              p50: ms(mid.lg.latencyUs.p50),
              p99: ms(mid.lg.latencyUs.p99),
              p999: ms(mid.lg.latencyUs.p999),
            },
      cpuUsPerExchange: median(rs.map((r) => r.cpuUsPerExchange)),
      failures: rs.reduce(
        (n, r) => n + r.lg.errors + r.lg.completed - (r.lg.statuses['200'] ?? 0),
        0,
      ),
      peakRssMiB: rss.get(s.name) ?? 0,
      accessToken: inspected.get(s.name) ?? {
        alg: '?',
        typ: '?',
        aud: undefined,
        hasRefreshToken: false,
        hasIdToken: false,
      },
      rounds: rs.map((r) => ({
        exchangesPerSecond: Math.round(okRate(r.lg)),
        p50Ms: ms(r.lg.latencyUs.p50),
        p99Ms: ms(r.lg.latencyUs.p99),
        cpuUsPerExchange: r.cpuUsPerExchange,
        failures: r.lg.errors + r.lg.completed - (r.lg.statuses['200'] ?? 0),
      })),
    };
  });
  const [p, o] = out;
  const perRound: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const a = p?.rounds[i]?.exchangesPerSecond;
    const b = o?.rounds[i]?.exchangesPerSecond;
    if (a !== undefined && b !== undefined && b > 0) perRound.push(a / b);
  }
  const ratio = Math.round(median(perRound) * 100) / 100;
  return {
    suite: 'token',
    startedAt,
    machine: {
      cpus: os.cpus().length,
      model: os.cpus()[0]?.model ?? 'unknown',
      node: process.version,
      loadavgAtStart,
      loadavgAtEnd: os.loadavg(),
    },
    load: {
      codesPerRound,
      connections,
      rounds,
      generator: 'bench/loadgen list mode (Go), every exchange sent once',
    },
    servers: out,
    ratio,
    goal: {
      goal: 'Portcullis ahead of oidc-provider (> 1x)',
      measured: `${ratio}x`,
      met: ratio > 1,
    },
  };
}
