// Every image, built by the tier's global setup from its Dockerfile as it ships, run as a plain
// container: it starts as a non-root uid, answers its health endpoint, and works with a read-only
// root filesystem (only /tmp writable, as in the pods). Sizes go to bench/results/e2e-images.*.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { generateClientSecret, hashClientSecret } from '../../lib/config/client-secret.ts';
import { hashPassword } from '../../lib/config/passwords.ts';
import { capture } from '../harness/kind/cluster.ts';
import { freePort } from '../harness/ports.ts';
import { writeResult } from './support/results.ts';

const ctx = inject('e2e');
const env = { ...process.env, ...(ctx.dockerHost ? { DOCKER_HOST: ctx.dockerHost } : {}) };
const docker = (...args: string[]) => capture('docker', args, env);
const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-e2e-images-'));
const started: string[] = [];

afterAll(async () => {
  for (const name of started) await docker('rm', '-f', name).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

interface Case {
  readonly program: string;
  /** Port inside the container, and the path that proves the program is up. */
  readonly port: number;
  readonly health: string;
  readonly expectBody?: RegExp;
  readonly command?: readonly string[];
  readonly env?: Record<string, string>;
  /** host folder -> container folder, mounted read-only */
  readonly mounts?: Record<string, string>;
}

async function cases(): Promise<Case[]> {
  // The sidecar: in-memory buckets, an upstream that is not there (health does not need it).
  const sidecarDir = path.join(dir, 'sidecar');
  mkdirSync(sidecarDir);
  writeFileSync(
    path.join(sidecarDir, 'config.yaml'),
    [
      'listen: { host: 0.0.0.0, port: 8080 }',
      'admin: { host: 0.0.0.0, port: 9090 }',
      'upstream: { url: "http://127.0.0.1:1" }',
      'route: { id: all, path: "/**" }',
      'limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 }',
      '',
    ].join('\n'),
  );
  // The auth server: one user and one client, from files as the operator mounts them.
  const authDir = path.join(dir, 'auth');
  mkdirSync(authDir);
  writeFileSync(
    path.join(authDir, 'users.json'),
    JSON.stringify({
      users: [{ username: 'alice', password_hash: await hashPassword('wonderland') }],
    }),
  );
  writeFileSync(
    path.join(authDir, 'clients.json'),
    JSON.stringify({
      clients: [
        {
          client_id: 'demo',
          client_secret_hash: hashClientSecret(generateClientSecret()),
          display_name: 'Demo',
          redirect_uris: ['http://127.0.0.1:3000/callback'],
          scopes: ['profile'],
        },
      ],
    }),
  );
  // The operator: an API server that does not answer. It must stay up (liveness) and say it is
  // not ready (its caches cannot sync), which is what its probes rely on.
  const opDir = path.join(dir, 'operator');
  mkdirSync(opDir);
  writeFileSync(
    path.join(opDir, 'kubeconfig'),
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{ name: none, cluster: { server: "http://127.0.0.1:1" } }]',
      'users: [{ name: none, user: { token: none } }]',
      'contexts: [{ name: none, context: { cluster: none, user: none } }]',
      'current-context: none',
      '',
    ].join('\n'),
  );
  return [
    {
      program: 'services/user-service',
      port: 8081,
      health: '/healthcheck/ready',
      expectBody: /^OK$/,
    },
    {
      program: 'sidecar',
      port: 9090,
      health: '/healthz',
      command: ['node', 'dist/sidecar/main.mjs', '--config', '/config/config.yaml'],
      mounts: { [sidecarDir]: '/config' },
    },
    {
      program: 'services/auth-server',
      port: 9000,
      health: '/.well-known/oauth-authorization-server',
      expectBody: /"authorization_endpoint"/,
      env: {
        AUTH_USERS_FILE: '/config/users.json',
        AUTH_CLIENTS_FILE: '/config/clients.json',
        AUTH_ISSUER: 'http://127.0.0.1:9000',
      },
      mounts: { [authDir]: '/config' },
    },
    {
      program: 'services/demo-client',
      port: 3000,
      health: '/',
      env: { DEMO_CLIENT_SECRET: 'not-used-until-sign-in' },
    },
    {
      program: 'operator',
      port: 8081,
      health: '/healthz',
      env: { KUBECONFIG: '/config/kubeconfig', PORTCULLIS_LEADER_ELECTION: 'false' },
      mounts: { [opDir]: '/config' },
    },
  ];
}

const sizes: Array<{ image: string; sizeMiB: number; buildSeconds: number }> = [];

describe('images as they ship', async () => {
  const all = await cases();

  it('every program with a Dockerfile was built', () => {
    expect(ctx.builtImages.map((i) => i.program).sort()).toEqual(all.map((c) => c.program).sort());
  });

  it.each(all)('$program: non-root, read-only root filesystem, answers $health', async (c) => {
    const image = ctx.builtImages.find((i) => i.program === c.program);
    expect(image).toBeDefined();
    const port = await freePort();
    const name = `portcullis-e2e-${path.basename(c.program)}-${process.pid}`;
    const args = [
      'run',
      '-d',
      '--name',
      name,
      '--read-only',
      '--tmpfs',
      '/tmp:rw,size=64m',
      '-p',
      `127.0.0.1:${port}:${c.port}`,
      '--cap-drop',
      'ALL',
      '--security-opt',
      'no-new-privileges',
    ];
    for (const [k, v] of Object.entries(c.env ?? {})) args.push('-e', `${k}=${v}`);
    for (const [host, inside] of Object.entries(c.mounts ?? {}))
      args.push('-v', `${host}:${inside}:ro`);
    args.push(image!.name, ...(c.command ?? []));
    await docker(...args);
    started.push(name);

    let status = 0;
    let body = '';
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}${c.health}`);
        status = res.status;
        body = await res.text();
        if (status === 200) break;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    const logs = await docker('logs', name).catch((e: unknown) => String(e));
    expect(status, `${c.program} logs:\n${logs}`).toBe(200);
    if (c.expectBody) expect(body).toMatch(c.expectBody);

    // The process runs as the image's non-root user, and the root filesystem refuses writes.
    expect((await docker('exec', name, 'id', '-u')).trim()).toBe('1000');
    const write = await docker(
      'exec',
      name,
      'sh',
      '-c',
      'touch /app/probe 2>&1 || echo refused',
    ).catch((e: unknown) => String(e));
    expect(write).toMatch(/Read-only file system|refused/);
    expect(JSON.parse(await docker('inspect', '-f', '{{json .State}}', name))).toMatchObject({
      Running: true,
      Restarting: false,
    });

    sizes.push({
      image: image!.name,
      sizeMiB: Math.round((image!.sizeBytes / 1048576) * 10) / 10,
      buildSeconds: image!.buildSeconds,
    });
  });

  it('image sizes are recorded', () => {
    expect(sizes.length).toBe(all.length);
    writeResult('e2e-images', {
      title: 'Container images as built by the e2e tier',
      note: `Base image ${ctx.images === 'offline' ? 'node:24-bookworm-slim stand-in (Debian bookworm minbase + Node 24), made offline' : 'node:24-bookworm-slim (public)'}; sizes as the engine reports them (uncompressed).`,
      rows: sizes.sort((a, b) => a.image.localeCompare(b.image)),
    });
    for (const s of sizes) expect(s.sizeMiB).toBeGreaterThan(0);
  });
});
