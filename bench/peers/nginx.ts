// nginx from Debian as the reverse-proxy anchor: proxy_pass to the same upstream over a keep-alive
// pool, limit_req per USER-ID (a per-instance shared-memory zone, not distributed) at a rate nobody
// reaches. One worker process, like the single-threaded Node gateways it is compared with.
// Runs unprivileged (uid/gid nobody) with its own prefix, config, pid, log and temp paths in a
// temp folder, on a free loopback port, in the foreground (daemon off).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../test/harness/ports.ts';
import { startProgram } from '../../test/harness/programs.ts';

const NOBODY = '65534';

/** nginx in front of the upstream on 127.0.0.1:`upstreamPort`, its limit_req at a rate and burst nobody reaches. */
export async function startNginx(upstreamPort: number) {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-nginx-'));
  for (const sub of ['logs', 'tmp/body', 'tmp/proxy', 'tmp/fastcgi', 'tmp/uwsgi', 'tmp/scgi'])
    mkdirSync(path.join(dir, sub), { recursive: true });
  const conf = `
worker_processes 1;
daemon off;
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
  limit_req_zone $http_user_id zone=per_user:10m rate=1000000r/s;
  upstream user_service {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      limit_req zone=per_user burst=1000000 nodelay;
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
  const root = process.getuid?.() === 0;
  if (root) execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, dir]);
  const program = await startProgram({
    name: 'bench-nginx',
    entry: 'nginx/nginx',
    executable: '/usr/sbin/nginx',
    args: ['-p', dir, '-c', confFile, '-e', path.join(dir, 'logs', 'error.log')],
    ...(root
      ? { launcher: ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'] }
      : {}),
    waitPort: port,
  });
  const pid = program.child.pid;
  return {
    url: `http://127.0.0.1:${port}`,
    pid,
    /** The worker's pid (does the proxying; the master only supervises). */
    workerPid(): number | undefined {
      try {
        const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
        return children === '' ? undefined : Number(children.split(/\s+/)[0]);
      } catch {
        return undefined;
      }
    },
    async stop() {
      await program.stop('SIGQUIT');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
