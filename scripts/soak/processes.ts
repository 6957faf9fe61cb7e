// The processes of the soak (scripts/soak.ts): a real redis-server (append-only, fsync on every
// write), the upstream user service, three sidecars as the operator deploys them (two on the
// route `soak` with onStoreError allow, one on `soak-deny` with deny), and two auth-server replicas
// sharing that Redis; every watched process with its inspector, for the heap readings.
import net from 'node:net';
import { SIDECAR_ENTRY, SIDECAR_ENV } from '../../operator/resources/route/deployment.ts';
import type { SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { connectInspector, type Inspector } from '../../test/harness/inspector.ts';
import { freePort } from '../../test/harness/ports.ts';
import {
  startProgram,
  startSidecar,
  type Program,
  type RunningSidecar,
} from '../../test/harness/programs.ts';
import { rssBytes } from '../../test/harness/raw-http.ts';
import { startRedis, type RedisServer } from '../../test/harness/redis.ts';
import { startStack, type Stack } from '../../test/harness/auth-stack.ts';
import { RULE, sleep } from './common.ts';

/** Every process is started with its inspector on a free port, for the heap readings. */
const INSPECT = '--inspect=127.0.0.1:0';

/**
 * Resolves once Redis answers PING with PONG. Accepting connections is not enough: while it
 * replays its append-only file after a restart, Redis answers every command with -LOADING.
 */
export async function redisAnswers(port: number, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const reply = await new Promise<string>((resolve) => {
      const socket = net.connect({ port, host: '127.0.0.1' });
      let text = '';
      socket.setTimeout(1000, () => socket.destroy());
      socket.on('data', (c: Buffer) => {
        text += c.toString('latin1');
        if (text.includes('\r\n')) socket.end();
      });
      socket.on('close', () => resolve(text));
      socket.on('error', () => resolve(''));
      socket.write('PING\r\n');
    });
    if (reply.startsWith('+PONG')) return;
    if (performance.now() > deadline)
      throw new Error(`redis on ${port} still answers ${JSON.stringify(reply.slice(0, 60))}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Sets up with setUp(); tearDown() stops whatever setUp got to start. */
export class SoakProcesses {
  redis!: RedisServer;
  upstreamPort!: number;
  upstream!: Program;
  readonly upstreamPrograms: Program[] = [];
  allowA!: RunningSidecar;
  allowB!: RunningSidecar;
  deny!: RunningSidecar;
  stack!: Stack;
  /** The auth-server replica restarted after its SIGKILL. */
  readonly replicaRestarts: Program[] = [];
  /** Inspectors of the processes whose memory is checked, by report name. */
  readonly inspectors: Record<string, Inspector> = {};

  authServer0(): Program {
    return this.stack.programs.find((p) => p.name === 'auth-server-0') as Program;
  }

  /**
   * (Re)starts the upstream on its fixed port and waits until it really serves. While it is down,
   * another process on this shared machine may briefly hold the port (a free-port probe): then
   * waitPort sees that listener, our process dies with EADDRINUSE, and we try again.
   */
  async startUpstream(): Promise<void> {
    const upstreamPort = this.upstreamPort;
    for (let attempt = 1; ; attempt++) {
      const p = await startProgram({
        name: 'user-service',
        entry: 'services/user-service/main.ts',
        env: { PORT: String(upstreamPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
        waitPort: upstreamPort,
      }).catch(() => undefined);
      if (p !== undefined) this.upstreamPrograms.push(p);
      await sleep(300);
      const serving =
        p !== undefined &&
        !p.exited() &&
        (await fetch(`http://127.0.0.1:${upstreamPort}/healthcheck/ready`, {
          signal: AbortSignal.timeout(2000),
        }).then(
          (r) => r.ok,
          () => false,
        ));
      if (serving) {
        this.upstream = p;
        return;
      }
      await p?.stop('SIGKILL');
      if (attempt >= 40) throw new Error(`the upstream did not come back on port ${upstreamPort}`);
      await sleep(250);
    }
  }

  sidecarConfig(
    route: string,
    policy: 'allow' | 'deny',
    spring: boolean,
  ): Omit<SidecarConfigInput, 'listen' | 'admin'> {
    return {
      upstream: {
        url: `http://127.0.0.1:${this.upstreamPort}`,
        timeoutMs: 3000,
        connectTimeoutMs: 1000,
      },
      route: { id: route },
      limiter: { ...RULE, onStoreError: policy, headers: { fields: true, draft: false, spring } },
      // A generous command timeout: fsync-always Redis on a shared 2-core machine can be slow, and a
      // timeout while Redis is up would fail open (this suite counts that as over-admission).
      redis: { url: this.redis.url, commandTimeoutMs: 1000, connectTimeoutMs: 1000 },
      logLevel: 'info',
    };
  }

  async setUp(): Promise<void> {
    // AOF with fsync on every write: a SIGKILL loses no acknowledged write, so consumed codes and
    // rotated refresh tokens stay consumed across the restart.
    this.redis = await startRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
    this.upstreamPort = await freePort();
    await this.startUpstream();
    // The sidecars run as the operator deploys them: the bundle, with the container's environment.
    const deployed = {
      entry: SIDECAR_ENTRY,
      env: { ...SIDECAR_ENV, NODE_OPTIONS: `${SIDECAR_ENV.NODE_OPTIONS} ${INSPECT}` },
    };
    this.allowA = await startSidecar(this.sidecarConfig('soak', 'allow', false), {
      ...deployed,
      name: 'sidecar-soak-a',
    });
    this.allowB = await startSidecar(this.sidecarConfig('soak', 'allow', false), {
      ...deployed,
      name: 'sidecar-soak-b',
    });
    this.deny = await startSidecar(this.sidecarConfig('soak-deny', 'deny', false), {
      ...deployed,
      name: 'sidecar-soak-deny',
    });
    this.stack = await startStack({
      redisUrl: this.redis.url,
      replicas: 2,
      authEnv: {
        AUTH_SIGNIN_USER_PER_MINUTE: '1000000',
        AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: '1000000',
        AUTH_SIGNIN_USER_ADDRESS_BURST: '1000000',
        AUTH_SIGNIN_ADDRESS_PER_MINUTE: '1000000',
        AUTH_SIGNIN_USER_BURST: '1000000',
        AUTH_SIGNIN_ADDRESS_BURST: '1000000',
        NODE_OPTIONS: INSPECT,
      },
    });
    const watched = {
      'sidecar-a': this.allowA.program,
      'sidecar-b': this.allowB.program,
      'sidecar-deny': this.deny.program,
      'auth-server-0': this.authServer0(),
    };
    for (const [k, p] of Object.entries(watched)) this.inspectors[k] = await connectInspector(p);
  }

  async tearDown(): Promise<void> {
    for (const i of Object.values(this.inspectors)) i.close();
    await Promise.allSettled([
      this.allowA?.program.stop(),
      this.allowB?.program.stop(),
      this.deny?.program.stop(),
      this.upstream?.stop(),
      ...this.replicaRestarts.map((p) => p.stop()),
    ]);
    await this.stack?.stop();
    await this.redis?.stop();
  }

  /** The pids of the watched processes, by report name. */
  pids(): Record<string, number> {
    return {
      'sidecar-a': this.allowA.program.child.pid as number,
      'sidecar-b': this.allowB.program.child.pid as number,
      'sidecar-deny': this.deny.program.child.pid as number,
      'auth-server-0': this.authServer0().child.pid as number,
    };
  }

  /** RSS and live heap (after a full GC) of every watched process, bytes. */
  async sampleMemory(): Promise<MemorySample> {
    const rss: Record<string, number> = {};
    const heap: Record<string, number> = {};
    for (const [k, pid] of Object.entries(this.pids())) {
      rss[k] = rssBytes(pid);
      heap[k] = await (this.inspectors[k] as Inspector).heapUsedAfterGc();
    }
    return { rss, heap };
  }
}

export interface MemorySample {
  readonly rss: Record<string, number>;
  readonly heap: Record<string, number>;
}
