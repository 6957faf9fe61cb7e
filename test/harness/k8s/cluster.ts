// A real Kubernetes control plane for the k8s tier: etcd + kube-apiserver (built from Go modules
// by build-tools.sh and cached), on free loopback ports, with a temporary data directory.
//
// Authentication: the admin is a client certificate in group system:masters (kubeconfigPath);
// any ServiceAccount gets a real bound token from the TokenRequest API (tokenFor/kubeconfigFor),
// so the operator can run with exactly the chart's RBAC. Authorization: RBAC only.
// There is no kubelet, scheduler or controller-manager: Deployments never get pods and nothing
// garbage-collects; tests assert ownerReferences and patch Deployment status themselves.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import https from 'node:https';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { freePort } from '../ports.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));

export interface K8sTools {
  readonly kubernetesVersion: string;
  readonly etcdVersion: string;
  readonly helmVersion: string;
  readonly kubeApiserver: string;
  readonly kubectl: string;
  readonly etcd: string;
  readonly helm: string;
  readonly kubeScore: string;
}

/** Paths of the cached tools (the layout build-tools.sh writes). Throws when the control plane's are missing. */
export function k8sTools(): K8sTools {
  const versions = Object.fromEntries(
    readFileSync(path.join(HERE, 'versions.env'), 'utf8')
      .split('\n')
      .map((line) => /^([A-Z_]+)=(\S+)/.exec(line))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1], m[2]]),
  );
  const need = (name: string): string => {
    const v = versions[name];
    if (v === undefined) throw new Error(`versions.env lacks ${name}`);
    return v;
  };
  const root =
    process.env['PORTCULLIS_K8S_CACHE'] ??
    path.join(process.env['XDG_CACHE_HOME'] ?? path.join(homedir(), '.cache'), 'portcullis', 'k8s');
  const k8s = path.join(root, `kubernetes-${need('KUBERNETES_VERSION')}`, 'bin');
  const tools: K8sTools = {
    kubernetesVersion: need('KUBERNETES_VERSION'),
    etcdVersion: need('ETCD_VERSION'),
    helmVersion: need('HELM_VERSION'),
    kubeApiserver: path.join(k8s, 'kube-apiserver'),
    kubectl: path.join(k8s, 'kubectl'),
    etcd: path.join(root, `etcd-${need('ETCD_VERSION')}`, 'bin', 'etcd'),
    helm: path.join(root, `helm-${need('HELM_VERSION')}`, 'bin', 'helm'),
    kubeScore: path.join(root, `kube-score-${need('KUBE_SCORE_VERSION')}`, 'bin', 'kube-score'),
  };
  for (const bin of [tools.kubeApiserver, tools.kubectl, tools.etcd]) {
    if (!existsSync(bin))
      throw new Error(
        `${bin} is missing: run \`make k8s-tools\` (test/harness/k8s/build-tools.sh) first`,
      );
  }
  return tools;
}

export interface ServiceAccountRef {
  readonly namespace: string;
  readonly name: string;
}

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Cluster {
  /** https://127.0.0.1:PORT */
  readonly server: string;
  /** kubeconfig of the admin (client certificate in system:masters). */
  readonly kubeconfigPath: string;
  /** Temporary directory: certificates, etcd data, logs (etcd.log, kube-apiserver.log). */
  readonly dir: string;
  readonly caPem: string;
  readonly tools: K8sTools;
  /** A bound ServiceAccount token from the TokenRequest API (the ServiceAccount must exist). */
  tokenFor(sa: ServiceAccountRef, expirationSeconds?: number): Promise<string>;
  /** Writes a kubeconfig that authenticates as the ServiceAccount; returns its path. */
  kubeconfigFor(sa: ServiceAccountRef): Promise<string>;
  /** Runs the matching kubectl (admin unless opts.kubeconfig); never rejects on a non-zero exit. */
  kubectl(
    args: readonly string[],
    opts?: { input?: string; kubeconfig?: string },
  ): Promise<RunResult>;
  /** Runs the cached helm with this cluster's admin kubeconfig. */
  helm(args: readonly string[], opts?: { input?: string }): Promise<RunResult>;
  /** A raw request as admin: returns status and parsed JSON body (or the text). */
  request(
    method: string,
    urlPath: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown }>;
  stopApiServer(): Promise<void>;
  startApiServer(): Promise<void>;
  restartApiServer(): Promise<void>;
  stopEtcd(): Promise<void>;
  startEtcd(): Promise<void>;
  restartEtcd(): Promise<void>;
  /** Stops both processes and removes the directory (kept when KEEP_K8S_DIR=1). */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

function run(
  cmd: string,
  args: readonly string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      args,
      { env: opts.env ?? process.env, cwd: opts.cwd, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
        resolve({
          code,
          stdout: String(stdout),
          stderr: String(stderr) || (err && typeof err.code !== 'number' ? err.message : ''),
        });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

async function openssl(dir: string, args: readonly string[]): Promise<void> {
  const r = await run('openssl', args, { cwd: dir });
  if (r.code !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`);
}

/** CA, serving certificate (127.0.0.1/localhost), admin client certificate, ServiceAccount key pair. */
async function makeCertificates(dir: string): Promise<void> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl(dir, [
    'req',
    '-x509',
    '-new',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '3650',
    '-subj',
    '/CN=portcullis-test-ca',
  ]);
  writeFileSync(
    path.join(dir, 'server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n',
  );
  writeFileSync(path.join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  const leaf = async (name: string, subj: string, ext: string) => {
    await openssl(dir, [
      'req',
      '-new',
      ...ec,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subj,
    ]);
    await openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '365',
      '-extfile',
      ext,
    ]);
  };
  await leaf('apiserver', '/CN=kube-apiserver', 'server.ext');
  await leaf('admin', '/O=system:masters/CN=portcullis-admin', 'client.ext');
  await openssl(dir, [
    'genpkey',
    '-algorithm',
    'RSA',
    '-pkeyopt',
    'rsa_keygen_bits:2048',
    '-out',
    'sa.key',
  ]);
  await openssl(dir, ['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub']);
}

function waitExit(child: ChildProcess, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

class ManagedProcess {
  private child: ChildProcess | undefined;
  private readonly bin: string;
  private readonly args: readonly string[];
  private readonly logFile: string;
  constructor(bin: string, args: readonly string[], logFile: string) {
    this.bin = bin;
    this.args = args;
    this.logFile = logFile;
  }
  get running(): boolean {
    return (
      this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
    );
  }
  start(): void {
    if (this.running) return;
    const fd = openSync(this.logFile, 'a');
    const child = spawn(this.bin, this.args, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    live.add(child);
    child.once('exit', () => live.delete(child));
    this.child = child;
  }
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGTERM');
    await waitExit(child, 15_000);
  }
  exitedMessage(): string | undefined {
    if (this.running || !this.child) return undefined;
    return `${path.basename(this.bin)} exited (${this.child.exitCode ?? this.child.signalCode}); last lines of ${this.logFile}:\n${tail(this.logFile)}`;
  }
}

async function poll(
  what: string,
  proc: ManagedProcess,
  logFile: string,
  timeoutMs: number,
  probe: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const exited = proc.exitedMessage();
    if (exited) throw new Error(`${what} did not start: ${exited}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline)
      throw new Error(
        `${what} not ready after ${timeoutMs} ms; last lines of ${logFile}:\n${tail(logFile)}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface StartClusterOptions {
  /** Extra kube-apiserver flags, e.g. ['--feature-gates=...']. */
  readonly apiServerArgs?: readonly string[];
  /** How long to wait for /readyz (ms). The first start on a busy 2-core machine is slow. */
  readonly readyTimeoutMs?: number;
  /** Other binaries than the cached ones (e.g. Debian's etcd, to check compatibility). */
  readonly tools?: Partial<K8sTools>;
  /**
   * A structured AuthenticationConfiguration (apiserver.config.k8s.io/v1), written into the
   * cluster's directory and passed as --authentication-config (e.g. JWT issuers for OIDC users).
   */
  readonly authenticationConfig?: Record<string, unknown>;
}

export async function startCluster(options: StartClusterOptions = {}): Promise<Cluster> {
  const tools: K8sTools = { ...k8sTools(), ...options.tools };
  const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-k8s-'));
  const file = (name: string) => path.join(dir, name);
  await makeCertificates(dir);
  const authnArgs: string[] = [];
  if (options.authenticationConfig !== undefined) {
    writeFileSync(file('authentication-config.yaml'), stringify(options.authenticationConfig));
    authnArgs.push(`--authentication-config=${file('authentication-config.yaml')}`);
  }
  const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${etcdClient}`;
  const server = `https://127.0.0.1:${apiPort}`;
  const readyTimeoutMs = options.readyTimeoutMs ?? 180_000;

  const etcd = new ManagedProcess(
    tools.etcd,
    [
      '--name=default',
      `--data-dir=${file('etcd-data')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
    file('etcd.log'),
  );
  const apiserver = new ManagedProcess(
    tools.kubeApiserver,
    [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--cert-dir=${file('apiserver-certs')}`,
      `--tls-cert-file=${file('apiserver.crt')}`,
      `--tls-private-key-file=${file('apiserver.key')}`,
      `--client-ca-file=${file('ca.crt')}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${file('sa.pub')}`,
      `--service-account-signing-key-file=${file('sa.key')}`,
      // Allocated only (no kube-proxy, no traffic): the built-in `kubernetes` Service needs a range.
      '--service-cluster-ip-range=10.96.0.0/20', // 4,094 Services: the operator benchmark creates 1,000
      '--endpoint-reconciler-type=none',
      '--allow-privileged=true',
      '--profiling=false',
      '--v=1',
      ...authnArgs,
      ...(options.apiServerArgs ?? []),
    ],
    file('kube-apiserver.log'),
  );

  const caPem = readFileSync(file('ca.crt'), 'utf8');
  const adminCert = readFileSync(file('admin.crt'), 'utf8');
  const adminKey = readFileSync(file('admin.key'), 'utf8');
  const agent = new https.Agent({ ca: caPem, cert: adminCert, key: adminKey, keepAlive: false });

  const request = (method: string, urlPath: string, body?: unknown) =>
    new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = https.request(
        `${server}${urlPath}`,
        {
          method,
          agent,
          headers: data ? { 'content-type': 'application/json' } : {},
          timeout: 30_000,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              // plain text (e.g. /readyz)
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath} timed out`)));
      req.on('error', reject);
      req.end(data);
    });

  const etcdHealthy = async () => {
    const res = await fetch(`${etcdUrl}/health`, { signal: AbortSignal.timeout(2_000) });
    return res.ok && String(((await res.json()) as { health?: unknown }).health) === 'true';
  };

  const cluster: Cluster = {
    server,
    kubeconfigPath: file('admin.kubeconfig'),
    dir,
    caPem,
    tools,
    async startEtcd() {
      etcd.start();
      await poll('etcd', etcd, file('etcd.log'), 60_000, etcdHealthy);
    },
    async stopEtcd() {
      await etcd.stop();
    },
    async restartEtcd() {
      await etcd.stop();
      await cluster.startEtcd();
    },
    async startApiServer() {
      apiserver.start();
      await poll(
        'kube-apiserver',
        apiserver,
        file('kube-apiserver.log'),
        readyTimeoutMs,
        async () => (await request('GET', '/readyz')).status === 200,
      );
    },
    async stopApiServer() {
      await apiserver.stop();
    },
    async restartApiServer() {
      await apiserver.stop();
      await cluster.startApiServer();
    },
    request,
    async tokenFor(sa, expirationSeconds = 86_400) {
      const res = await request(
        'POST',
        `/api/v1/namespaces/${sa.namespace}/serviceaccounts/${sa.name}/token`,
        {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds },
        },
      );
      const token = (res.body as { status?: { token?: unknown } } | undefined)?.status?.token;
      if (res.status !== 201 || typeof token !== 'string') {
        throw new Error(
          `TokenRequest for ${sa.namespace}/${sa.name} failed (${res.status}): ${JSON.stringify(res.body)}`,
        );
      }
      return token;
    },
    async kubeconfigFor(sa) {
      const token = await cluster.tokenFor(sa);
      const p = file(`sa-${sa.namespace}-${sa.name}.kubeconfig`);
      writeFileSync(
        p,
        kubeconfig(
          server,
          caPem,
          `system:serviceaccount:${sa.namespace}:${sa.name}`,
          { token },
          sa.namespace,
        ),
        { mode: 0o600 },
      );
      return p;
    },
    kubectl(args, opts = {}) {
      return run(
        tools.kubectl,
        ['--kubeconfig', opts.kubeconfig ?? cluster.kubeconfigPath, ...args],
        { input: opts.input },
      );
    },
    helm(args, opts = {}) {
      if (!existsSync(tools.helm))
        throw new Error(`${tools.helm} is missing: run \`make k8s-tools\` first`);
      const env = {
        ...process.env,
        KUBECONFIG: cluster.kubeconfigPath,
        HELM_CACHE_HOME: file('helm/cache'),
        HELM_CONFIG_HOME: file('helm/config'),
        HELM_DATA_HOME: file('helm/data'),
      };
      return run(tools.helm, args, { input: opts.input, env });
    },
    async stop() {
      await apiserver.stop();
      await etcd.stop();
      agent.destroy();
      if (process.env['KEEP_K8S_DIR'] !== '1') rmSync(dir, { recursive: true, force: true });
    },
  };

  writeFileSync(
    cluster.kubeconfigPath,
    kubeconfig(
      server,
      caPem,
      'admin',
      { 'client-certificate-data': b64(adminCert), 'client-key-data': b64(adminKey) },
      'default',
    ),
    { mode: 0o600 },
  );
  try {
    await cluster.startEtcd();
    await cluster.startApiServer();
  } catch (err) {
    await apiserver.stop();
    await etcd.stop();
    throw err;
  }
  return cluster;
}

function b64(s: string): string {
  return Buffer.from(s).toString('base64');
}

function kubeconfig(
  server: string,
  caPem: string,
  user: string,
  credentials: Record<string, string>,
  namespace: string,
): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'portcullis-test', cluster: { server, 'certificate-authority-data': b64(caPem) } },
    ],
    users: [{ name: user, user: credentials }],
    contexts: [{ name: user, context: { cluster: 'portcullis-test', user, namespace } }],
    'current-context': user,
  });
}
