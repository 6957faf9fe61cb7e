// nginx from Debian as the reverse-proxy anchor: proxy_pass to the same upstream over a keep-alive
// pool, limit_req per USER-ID (a per-instance shared-memory zone, not distributed) at a rate nobody
// reaches. One worker process, like the single-threaded Node gateways it is compared with.
// Runs unprivileged (uid/gid nobody) with its own prefix, config, pid, log and temp paths in a
// temp folder, on a free loopback port, in the foreground (daemon off) so it stops with SIGQUIT.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitForPort } from '../../test/harness/ports.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const NOBODY = 65534;

export interface RunningNginx {
  readonly url: string;
  readonly child: ChildProcess;
  /** The worker's pid (does the proxying; the master only supervises). */
  workerPid(): number | undefined;
  stop(): Promise<void>;
}

export function ensureNginx(): void {
  execFileSync(path.join(repoRoot, 'scripts', 'ensure-system-deps.sh'), ['nginx:nginx'], {
    stdio: 'inherit',
    env: { ...process.env, PATH: `${process.env['PATH'] ?? ''}:/usr/sbin:/sbin` },
  });
}

export interface NginxOptions {
  readonly upstreamPort: number;
  readonly ratePerSecond: number;
  readonly burst: number;
  /**
   * A command put before nginx (e.g. valgrind). nginx then runs as one process (master_process
   * off), so the process started is the one that proxies, and keeps the caller's user.
   */
  readonly launcher?: readonly string[];
  /** How long to wait for the port (default 15 s). */
  readonly waitPortMs?: number;
}

export async function startNginx(options: NginxOptions): Promise<RunningNginx> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-nginx-'));
  for (const sub of ['logs', 'tmp/body', 'tmp/proxy', 'tmp/fastcgi', 'tmp/uwsgi', 'tmp/scgi'])
    mkdirSync(path.join(dir, sub), { recursive: true });
  const single = options.launcher !== undefined;
  const conf = `
worker_processes 1;
daemon off;${single ? '\nmaster_process off;' : ''}
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  keepalive_requests 1000000;
  limit_req_zone $http_user_id zone=per_user:10m rate=${options.ratePerSecond}r/s;
  upstream user_service {
    server 127.0.0.1:${options.upstreamPort};
    keepalive 64;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      limit_req zone=per_user burst=${options.burst} nodelay;
      limit_req_status 429;
      proxy_pass http://user_service;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $http_host;
    }
  }
}
`;
  const confFile = path.join(dir, 'nginx.conf');
  writeFileSync(confFile, conf);
  execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, dir]);
  chownSync(dir, NOBODY, NOBODY);
  const isRoot = process.getuid?.() === 0;
  const command = [
    ...(options.launcher ?? []),
    '/usr/sbin/nginx',
    '-p',
    dir,
    '-c',
    confFile,
    '-e',
    path.join(dir, 'logs', 'error.log'),
  ];
  const child = spawn(command[0] as string, command.slice(1), {
    stdio: ['ignore', 'inherit', 'inherit'],
    // Under a launcher it stays root: valgrind's control pipes (callgrind_control) are named after
    // the user, and root's callgrind_control cannot reach those of a process that dropped to nobody.
    ...(isRoot && !single ? { uid: NOBODY, gid: NOBODY } : {}),
  });
  await waitForPort(port, options.waitPortMs);
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    workerPid() {
      if (single) return child.pid;
      try {
        const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8')
          .trim()
          .split(/\s+/)
          .filter(Boolean);
        return children.length > 0 ? Number(children[0]) : undefined;
      } catch {
        return undefined;
      }
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGQUIT');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
