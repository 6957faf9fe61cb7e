// Real gateways no one here wrote, started in front of the user service and asking the decision
// service: nginx (Debian's, auth_request) and Caddy (built from its Go module, forward_auth), each
// a foreground process on a free loopback port with its files in a temp folder. The configs are
// the ones docs/concepts/gateway.md shows (nginxConfig, caddyfile), so the documented snippets are tested.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../ports.ts';
import { startProgram, type Program } from '../programs.ts';
import { printedPath } from '../printed-path.ts';

export interface RunningGateway {
  readonly program: Program;
  readonly url: string;
}

/** A path printed by one of this folder's build scripts (`NAME=path` with --print-env). */
export function builtTool(script: string, name: string): string {
  return printedPath(`test/harness/gateways/${script}`, name);
}

/**
 * The nginx server block of docs/concepts/gateway.md ("nginx"): auth_request to the decision service, and
 * the error_page wiring that turns its refusals (which auth_request reports as 500) back into
 * their status, Retry-After, RateLimit headers and problem+json body.
 */
export const nginxServer = (listen: string, decision: string, service: string): string => `
  server {
    listen ${listen};

    location / {
      auth_request /.portcullis;
      # What the decision service answered, kept for the response (admitted) or the refusal.
      auth_request_set $portcullis_status $upstream_status;
      auth_request_set $portcullis_problem $upstream_http_portcullis_problem;
      auth_request_set $portcullis_retry_after $upstream_http_retry_after;
      auth_request_set $portcullis_ratelimit $upstream_http_ratelimit;
      auth_request_set $portcullis_ratelimit_policy $upstream_http_ratelimit_policy;
      add_header RateLimit $portcullis_ratelimit always;
      add_header RateLimit-Policy $portcullis_ratelimit_policy always;
      # auth_request turns any status but 2xx, 401 and 403 into 500: send those to the refusal.
      error_page 500 = @portcullis_refused;
      proxy_pass http://${service};
    }

    location = /.portcullis {
      internal;
      proxy_pass http://${decision};
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-Method $request_method;
      proxy_set_header X-Original-URI $request_uri;
      # Ask for the problem+json body in a header: auth_request drops the body.
      proxy_set_header Portcullis-Problem-In-Header 1;
    }

    location @portcullis_refused {
      default_type application/problem+json;
      add_header Retry-After $portcullis_retry_after always;
      add_header RateLimit $portcullis_ratelimit always;
      add_header RateLimit-Policy $portcullis_ratelimit_policy always;
      add_header Cache-Control no-store always;
      if ($portcullis_status = 429) { return 429 $portcullis_problem; }
      if ($portcullis_status = 400) { return 400 $portcullis_problem; }
      if ($portcullis_status = 404) { return 404 $portcullis_problem; }
      if ($portcullis_status = 503) { return 503 $portcullis_problem; }
      # The decision service did not answer (or failed): not an admission.
      return 503;
    }
  }
`;

/** Debian's nginx, foreground, one process, everything under a temp folder, on a free loopback port. */
export async function startNginx(
  decisionPort: number,
  servicePort: number,
): Promise<RunningGateway> {
  const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-nginx-'));
  for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(path.join(dir, d));
  const port = await freePort();
  const conf = `
daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log notice;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  ${nginxServer(`127.0.0.1:${port}`, `127.0.0.1:${decisionPort}`, `127.0.0.1:${servicePort}`)}
}
`;
  writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const program = await startProgram({
    entry: 'nginx/nginx',
    executable: '/usr/sbin/nginx',
    args: ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')],
    waitPort: port,
    name: 'nginx',
  });
  return { program, url: `http://127.0.0.1:${port}` };
}

/**
 * The Caddyfile site of docs/concepts/gateway.md ("Caddy"): forward_auth to the decision service,
 * then the service. failOpen: the documented variant that serves without a limit while the
 * decision service cannot be reached at all (removed, or no pod ready).
 */
export const caddySite = (
  listen: string,
  decision: string,
  service: string,
  o: { failOpen?: boolean } = {},
): string => `
http://${listen} {
  forward_auth ${decision} {
    uri /check
    # Admitted: the limiter's headers and the identity charged travel on to the service.
    copy_headers RateLimit RateLimit-Policy USER-ID
  }
  # Admitted: the same headers on the response (a refusal carries its own, kept as they are).
  header ?RateLimit {http.request.header.RateLimit}
  header ?RateLimit-Policy {http.request.header.RateLimit-Policy}
  reverse_proxy ${service}
${
  o.failOpen === true
    ? `  # No answer from the decision service (a refused or failed connection is a 502 here):
  # serve without a limit rather than fail every request.
  handle_errors 502 {
    reverse_proxy ${service}
  }
`
    : ''
}}
`;

/** Caddy (built from its Go module by build-caddy.sh), foreground, admin API off, on a free loopback port. */
export async function startCaddy(
  decisionPort: number,
  servicePort: number,
): Promise<RunningGateway> {
  const caddy = builtTool('build-caddy.sh', 'CADDY');
  const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-caddy-'));
  const port = await freePort();
  const caddyfile = `{
  admin off
  auto_https off
  persist_config off
  storage file_system ${dir}/data
}
${caddySite(`127.0.0.1:${port}`, `127.0.0.1:${decisionPort}`, `127.0.0.1:${servicePort}`)}`;
  writeFileSync(path.join(dir, 'Caddyfile'), caddyfile);
  const program = await startProgram({
    entry: 'caddy/caddy',
    executable: caddy,
    args: ['run', '--config', path.join(dir, 'Caddyfile'), '--adapter', 'caddyfile'],
    env: {
      HOME: dir,
      XDG_DATA_HOME: path.join(dir, 'data'),
      XDG_CONFIG_HOME: path.join(dir, 'config'),
    },
    waitPort: port,
    name: 'caddy',
  });
  return { program, url: `http://127.0.0.1:${port}` };
}
