// The soak's traffic (scripts/soak.ts): gateway users through the sidecars, some far over their
// limit, and OAuth code flows with PKCE, code replays and refresh rotations against the two
// auth-server replicas. Every gateway request goes into the timeline; the OAuth outcomes are counted.
import { authorize, pkce, tokenRequest } from '../../test/harness/auth-flow.ts';
import { SECRETS } from '../../test/harness/auth-stack.ts';
import { now, sleep, type GatewayRecord, type Timeline } from './common.ts';
import type { SoakProcesses } from './processes.ts';

/** Per-request client deadline: anything slower is a hang. */
const CLIENT_TIMEOUT_MS = 10_000;
/** The auth server may answer 503 (store unavailable) until this long after Redis returns. */
const AUTH_RECOVERY_MS = 10_000;

export interface SoakUser {
  readonly id: string;
  readonly route: 'allow' | 'deny';
  readonly kind: 'heavy' | 'light';
  readonly periodMs: number;
}

export const users: SoakUser[] = [
  ...Array.from({ length: 6 }, (_, i) => ({
    id: `heavy-${i}`,
    route: 'allow' as const,
    kind: 'heavy' as const,
    periodMs: 70,
  })),
  ...Array.from({ length: 20 }, (_, i) => ({
    id: `light-${i}`,
    route: 'allow' as const,
    kind: 'light' as const,
    periodMs: 1000,
  })),
  ...Array.from({ length: 3 }, (_, i) => ({
    id: `deny-heavy-${i}`,
    route: 'deny' as const,
    kind: 'heavy' as const,
    periodMs: 100,
  })),
  ...Array.from({ length: 3 }, (_, i) => ({
    id: `deny-light-${i}`,
    route: 'deny' as const,
    kind: 'light' as const,
    periodMs: 1000,
  })),
];

/** One user's requests until the end of the run, every periodMs, alternating between the two allow sidecars. */
export async function userLoop(
  p: SoakProcesses,
  tl: Timeline,
  u: SoakUser,
  index: number,
): Promise<void> {
  const { allowA, allowB, deny } = p;
  const { end, gateway } = tl;
  let n = index;
  await sleep((index * 37) % 500);
  while (now() < end) {
    const sidecar = u.route === 'deny' ? deny : n++ % 2 === 0 ? allowA : allowB;
    const send = now();
    let status: GatewayRecord['status'];
    let decided = false;
    let spring = false;
    try {
      const res = await fetch(`${sidecar.url}/healthcheck/ready`, {
        headers: { 'USER-ID': u.id },
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      });
      await res.arrayBuffer();
      status = res.status;
      decided = res.headers.has('ratelimit-remaining');
      spring = res.headers.has('x-ratelimit-burst-capacity');
    } catch (err) {
      status = (err as Error).name === 'TimeoutError' ? 'timeout' : 'error';
    }
    const recv = now();
    gateway.push({
      user: u.id,
      route: u.route,
      kind: u.kind,
      via: sidecar.program.name,
      send,
      recv,
      status,
      decided,
      spring,
    });
    await sleep(u.periodMs - (recv - send));
  }
}

/** What the OAuth flows saw; server5xx lists the 5xx answers no fault explains. */
export type OAuthCounts = ReturnType<typeof oauthCounts>;

export const oauthCounts = () => ({
  flows: 0,
  interrupted: 0,
  exchanges: 0,
  codeReplaysRejected: 0,
  codeDoubleUse: 0,
  refreshRotations: 0,
  refreshReplaysRejected: 0,
  refreshDoubleUse: 0,
  server5xx: [] as string[],
  lostInFaultWindow: 0,
});

/**
 * The OAuth side of the run: `flowLoop(worker)` runs code flows until the end; `auth503LagMs`
 * collects, for every 503 of a token call, the ms since the last Redis restart (0 while Redis was down).
 */
export function oauthTraffic(
  p: SoakProcesses,
  tl: Timeline,
  oauth: OAuthCounts,
  auth503LagMs: number[],
): { flowLoop: (worker: number) => Promise<void> } {
  const { stack } = p;
  const { end, redisDown, replicaDown } = tl;
  const aliveReplicas = () =>
    stack.authUrls.filter((_, i) => !(i === 1 && replicaDown.some((w) => w.end === Infinity)));
  /** Retries a token call while the answer is 503 (Redis down) or the replica is unreachable. */
  const tokenCall = async (body: Record<string, string>, preferred: number) => {
    const deadline = now() + 20_000;
    let attempt = preferred;
    for (;;) {
      const replicas = aliveReplicas();
      const url = replicas[attempt++ % replicas.length] as string;
      try {
        const r = await tokenRequest(url, body);
        if (r.status >= 500) {
          if (r.status !== 503) oauth.server5xx.push(`token ${r.status} ${JSON.stringify(r.json)}`);
          else {
            // 503 temporarily_unavailable is the auth server's store-error policy: expected while
            // Redis is down and until its client has reconnected (ioredis backs off up to 2 s).
            const t = now();
            const last = redisDown.filter((w) => w.start <= t).at(-1);
            const lag = last === undefined ? Infinity : last.end === Infinity ? 0 : t - last.end;
            auth503LagMs.push(lag);
            if (lag > AUTH_RECOVERY_MS)
              oauth.server5xx.push(
                `token 503 ${lag === Infinity ? 'with no Redis fault before it' : `${lag.toFixed(0)} ms after Redis returned`}`,
              );
          }
        } else return r;
      } catch {
        // connection refused: the replica was killed
      }
      if (now() > deadline) return undefined;
      await sleep(200);
    }
  };
  const flowLoop = async (worker: number) => {
    let i = worker;
    while (now() < end) {
      const started = now();
      i++;
      try {
        const replicas = aliveReplicas();
        const issuer = replicas[i % replicas.length] as string;
        const { verifier, challenge } = pkce();
        const { location } = await authorize({
          issuer,
          clientId: 'demo-client',
          redirectUri: stack.redirectUri,
          challenge,
          state: `s${i}`,
        });
        const code = location.searchParams.get('code');
        if (code === null) throw new Error(`no code: ${location}`);
        oauth.flows++;
        const body = {
          grant_type: 'authorization_code',
          code,
          redirect_uri: stack.redirectUri,
          client_id: 'demo-client',
          client_secret: SECRETS.post,
          code_verifier: verifier,
        };
        const first = await tokenCall(body, i + 1);
        if (first === undefined || first.status !== 200) {
          // A 503 during a Redis fault may have consumed the code before the answer was lost.
          oauth.lostInFaultWindow++;
          continue;
        }
        oauth.exchanges++;
        const replay = await tokenCall(body, i);
        if (replay?.status === 200) oauth.codeDoubleUse++;
        else if (replay?.status === 400 && replay.json.error === 'invalid_grant')
          oauth.codeReplaysRejected++;
        // The replay revoked the tokens of the first exchange (RFC 6749 4.1.2): its refresh
        // token must not work either. Rotate a fresh family instead.
        const refresh = String(first.json.refresh_token);
        const revoked = await tokenCall(
          {
            grant_type: 'refresh_token',
            refresh_token: refresh,
            client_id: 'demo-client',
            client_secret: SECRETS.post,
          },
          i,
        );
        if (revoked?.status === 200) oauth.refreshDoubleUse++;
        // A second flow to exercise rotation and reuse detection.
        const p2 = pkce();
        const second = await authorize({
          issuer,
          clientId: 'demo-client',
          redirectUri: stack.redirectUri,
          challenge: p2.challenge,
        });
        const code2 = second.location.searchParams.get('code');
        if (code2 === null) throw new Error('no second code');
        const t2 = await tokenCall({ ...body, code: code2, code_verifier: p2.verifier }, i);
        if (t2?.status !== 200) {
          oauth.lostInFaultWindow++;
          continue;
        }
        const rt1 = String(t2.json.refresh_token);
        const rotated = await tokenCall(
          {
            grant_type: 'refresh_token',
            refresh_token: rt1,
            client_id: 'demo-client',
            client_secret: SECRETS.post,
          },
          i + 1,
        );
        if (rotated?.status !== 200) {
          oauth.lostInFaultWindow++;
          continue;
        }
        oauth.refreshRotations++;
        const reuse = await tokenCall(
          {
            grant_type: 'refresh_token',
            refresh_token: rt1,
            client_id: 'demo-client',
            client_secret: SECRETS.post,
          },
          i,
        );
        if (reuse?.status === 200) oauth.refreshDoubleUse++;
        else if (reuse?.status === 400) oauth.refreshReplaysRejected++;
      } catch {
        oauth.interrupted++; // a replica died or Redis was down mid-flow: start again
      }
      await sleep(500 - (now() - started));
    }
  };
  return { flowLoop };
}
