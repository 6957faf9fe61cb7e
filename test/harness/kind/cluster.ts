// The e2e tier's cluster, as users run the project: images built from the Dockerfiles as they
// ship, a kind cluster, the CRDs applied server-side and the chart installed with helm.
//
// Two ways to get there, chosen once per run:
//   - a Docker engine already answers (DOCKER_HOST or the default socket) and
//     PORTCULLIS_E2E_OFFLINE is not 1: that engine, stock kind with its default node image, and
//     the public base images (what users with Docker and internet get);
//   - otherwise a private dockerd this run starts and stops (dockerd.sh), a node image and base
//     image stand-ins made offline (images.sh), all cached outside the repository.
// The cluster is created once per run and deleted at the end unless KEEP_CLUSTER=1; a cluster of
// the same name that already existed is used and never deleted.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../ports.ts';
import type { E2eContext, E2eImage } from './context.ts';
import { CADDY_PEER, loadPeerImage, OAUTH2_PROXY_PEER } from './peer-images.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '..', '..', '..');
const STATE =
  process.env['PORTCULLIS_E2E_STATE'] ??
  path.join(process.env['XDG_CACHE_HOME'] ?? path.join(homedir(), '.cache'), 'portcullis', 'e2e');

/** The programs' folders; each is built from the one Dockerfile into portcullis/<basename>:<tag>. */
export const PROGRAMS = [
  'operator',
  'sidecar',
  'services/auth-server',
  'services/user-service',
  'services/demo-client',
] as const;
export const REDIS_IMAGE = 'redis:7-alpine';
export const BASE_IMAGE = 'node:24-bookworm-slim';

function log(message: string): void {
  process.stderr.write(`e2e: ${message}\n`);
}

interface RunOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly input?: string | Buffer;
  /** Stream the command's output to stderr (long builds) instead of collecting it. */
  readonly stream?: boolean;
  readonly cwd?: string;
}

/** Runs a command; resolves with stdout, rejects with the tail of its output. */
export function run(
  command: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? REPO,
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      output += d.toString();
      if (options.stream) process.stderr.write(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
      if (options.stream) process.stderr.write(d);
    });
    child.stdin.end(options.input ?? '');
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(stdout);
      else
        reject(
          new Error(
            `${path.basename(command)} ${args.join(' ')} exited ${String(code)}:\n${output.split('\n').slice(-40).join('\n')}`,
          ),
        );
    });
  });
}

function parseEnvLines(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .map((l) => /^([A-Z_]+)=(.*)$/.exec(l.trim()))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1], m[2]]),
  );
}

async function engineAnswers(env: NodeJS.ProcessEnv): Promise<boolean> {
  try {
    await run('docker', ['info', '--format', '{{.ServerVersion}}'], { env });
    return true;
  } catch {
    return false;
  }
}

async function timed<T>(
  timings: Record<string, number>,
  step: string,
  fn: () => Promise<T>,
): Promise<T> {
  const start = performance.now();
  log(`${step} ...`);
  try {
    return await fn();
  } finally {
    timings[step] = Math.round((performance.now() - start) / 100) / 10;
    log(`${step}: ${timings[step]} s`);
  }
}

export interface Provisioned {
  readonly context: E2eContext;
  /** Deletes what this run created (cluster, engine) unless KEEP_CLUSTER=1. */
  teardown(): Promise<void>;
}

export async function provision(): Promise<Provisioned> {
  mkdirSync(STATE, { recursive: true });
  const timings: Record<string, number> = {};
  const keep = process.env['KEEP_CLUSTER'] === '1';
  const offlineWanted = process.env['PORTCULLIS_E2E_OFFLINE'] === '1';
  const useHostEngine = !offlineWanted && (await engineAnswers(process.env));
  const engine = useHostEngine ? 'host' : 'private';
  const images = useHostEngine ? 'public' : 'offline';
  log(
    `engine: ${engine === 'host' ? 'the Docker engine already running here' : 'a private dockerd (test/harness/kind/dockerd.sh)'}; images: ${images}`,
  );

  // Everything after this point runs with DOCKER_HOST set to the engine in use.
  const env: NodeJS.ProcessEnv = { ...process.env };
  let startedEngine = false;
  if (engine === 'private') {
    const dockerHost = parseEnvLines(await run(path.join(HERE, 'dockerd.sh'), ['env']))[
      'DOCKER_HOST'
    ];
    env['DOCKER_HOST'] = dockerHost;
    const wasRunning = await engineAnswers(env);
    await timed(timings, 'private dockerd', () =>
      run(path.join(HERE, 'dockerd.sh'), ['start'], { env, stream: true }),
    );
    startedEngine = !wasRunning;
  }
  const stopEngine = async () => {
    if (startedEngine && !keep)
      await run(path.join(HERE, 'dockerd.sh'), ['stop'], { env, stream: true });
  };

  try {
    const tools = parseEnvLines(
      await timed(timings, 'tools (kubernetes, etcd, helm, kind, crictl, coredns, pause)', () =>
        run(path.join(REPO, 'test/harness/k8s/build-tools.sh'), ['--node', '--print-env'], {
          env,
          stream: false,
        }),
      ),
    );
    const need = (k: string): string => {
      const v = tools[k];
      if (v === undefined) throw new Error(`build-tools.sh did not print ${k}`);
      return v;
    };
    const kubernetesVersion =
      parseEnvLines(readFileSync(path.join(REPO, 'test/harness/k8s/versions.env'), 'utf8'))[
        'KUBERNETES_VERSION'
      ] ?? 'unknown';

    let nodeImage: string | undefined;
    if (images === 'offline') {
      nodeImage = (
        await timed(timings, 'kind node image (offline)', () =>
          run(path.join(HERE, 'images.sh'), ['node'], { env }),
        )
      )
        .trim()
        .split('\n')
        .pop();
      await timed(timings, 'base image stand-ins', () =>
        run(path.join(HERE, 'images.sh'), ['standins'], { env }),
      );
    } else {
      await timed(timings, `pull ${REDIS_IMAGE}`, () =>
        run('docker', ['pull', REDIS_IMAGE], { env }),
      );
    }

    // Built under a working tag, then tagged by content: a cluster kept from an earlier run
    // (KEEP_CLUSTER=1) gets new pods whenever an image changed, never a stale image by an old name.
    const built: Array<{ -readonly [K in keyof E2eImage]: E2eImage[K] } & { id: string }> = [];
    for (const program of PROGRAMS) {
      const name = `portcullis/${path.basename(program)}:e2e-build`;
      const start = performance.now();
      await timed(timings, `image ${path.basename(program)}`, () =>
        run(
          'docker',
          [
            'build',
            '--build-arg',
            `PROGRAM=${path.basename(program)}`,
            '--build-arg',
            `SOURCE=${program}`,
            '-t',
            name,
            '--build-arg',
            `BASE_IMAGE=${BASE_IMAGE}`,
            // Offline: the classic builder (BuildKit would fetch its Dockerfile frontend) and the
            // host's network, since the private engine's bridge has no route out (npm ci).
            ...(images === 'offline' ? ['--network', 'host'] : []),
            '.',
          ],
          { env: { ...env, DOCKER_BUILDKIT: images === 'offline' ? '0' : '1' } },
        ),
      );
      const [id = '', size = '0'] = (
        await run('docker', ['image', 'inspect', '-f', '{{.Id}} {{.Size}}', name], { env })
      )
        .trim()
        .split(' ');
      built.push({
        name,
        program,
        sizeBytes: Number(size),
        buildSeconds: Math.round((performance.now() - start) / 100) / 10,
        id,
      });
    }
    const tag = `e2e-${createHash('sha256')
      .update(built.map((b) => b.id).join())
      .digest('hex')
      .slice(0, 10)}`;
    for (const image of built) {
      const final = image.name.replace(/:e2e-build$/, `:${tag}`);
      await run('docker', ['tag', image.name, final], { env });
      image.name = final;
    }
    // Earlier runs' content tags are not used again: they would only fill the disk.
    const stale = (
      await run('docker', ['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}', 'portcullis/*'], {
        env,
      })
    )
      .split('\n')
      .filter((n) => /:e2e-[0-9a-f]{10}$/.test(n) && !n.endsWith(`:${tag}`));
    if (stale.length > 0)
      await run('docker', ['rmi', ...stale], { env }).catch((err: unknown) =>
        log(`could not remove old images: ${String(err)}`),
      );

    const cluster = process.env['E2E_CLUSTER'] ?? 'portcullis-e2e';
    const kind = need('KIND');
    const kubeconfig = path.join(STATE, `kubeconfig-${cluster}`);
    const existing = (await run(kind, ['get', 'clusters'], { env })).split('\n').includes(cluster);
    let createdCluster = false;
    const deleteCluster = async () => {
      if (createdCluster && !keep)
        await run(kind, ['delete', 'cluster', '--name', cluster, '--kubeconfig', kubeconfig], {
          env,
          stream: true,
        });
    };
    try {
      if (existing) {
        log(
          `cluster ${cluster} exists (kept by an earlier run): using it; this run will not delete it`,
        );
        await run(kind, ['export', 'kubeconfig', '--name', cluster, '--kubeconfig', kubeconfig], {
          env,
        });
      } else {
        const config = path.join(STATE, `kind-${cluster}.yaml`);
        writeFileSync(config, kindConfig(images === 'offline'));
        createdCluster = true;
        await timed(timings, 'kind create cluster', async () => {
          try {
            await run(
              kind,
              [
                'create',
                'cluster',
                '--name',
                cluster,
                ...(nodeImage ? ['--image', nodeImage] : []),
                '--config',
                config,
                '--kubeconfig',
                kubeconfig,
                '--wait',
                '5m',
                '--retain',
              ],
              { env },
            );
          } catch (err) {
            throw new Error(
              `the kind cluster did not come up.\n${String(err)}\n--- kubelet (last lines) ---\n${await kubeletTail(env, `${cluster}-control-plane`)}`,
            );
          }
        });
      }
      const node = `${cluster}-control-plane`;
      const kubectl = need('KUBECTL');
      // NetworkPolicies are enforced: by kindnetd on stock kind, offline by kube-router's firewall.
      if (images === 'offline')
        await timed(timings, 'kube-router (NetworkPolicy enforcer)', () =>
          installKubeRouter(kubectl, kubeconfig, env),
        );
      await timed(timings, 'kind load images', async () => {
        for (const image of [...built.map((i) => i.name), REDIS_IMAGE])
          await run(kind, ['load', 'docker-image', image, '--name', cluster], { env });
      });
      const oauth2ProxyImage = await timed(timings, 'oauth2-proxy image (peer-images.ts)', () =>
        loadPeerImage(OAUTH2_PROXY_PEER, kind, cluster, env),
      );
      const caddyImage = await timed(timings, 'Caddy image (peer-images.ts)', () =>
        loadPeerImage(CADDY_PEER, kind, cluster, env),
      );

      const helm = need('HELM');
      const release = 'portcullis';
      const releaseNamespace = 'portcullis-system';
      const issuerPort = await freePort();
      await timed(timings, 'CRDs + helm install', async () => {
        // As the README says: CRDs server-side, then the chart.
        await run(kubectl, ['--kubeconfig', kubeconfig, 'apply', '--server-side', '-f', 'crds/'], {
          env,
        });
        await run(
          helm,
          [
            'upgrade',
            '--install',
            release,
            'charts/portcullis',
            '--kubeconfig',
            kubeconfig,
            '--namespace',
            releaseNamespace,
            '--create-namespace',
            '--wait',
            '--timeout',
            '5m',
            '--set',
            `images.tag=${tag}`,
            '--set',
            'images.pullPolicy=IfNotPresent',
            '--set',
            `auth.issuerUrl=http://127.0.0.1:${issuerPort}`,
            // The bundled Redis admits clients only from namespaces the platform labelled (every
            // namespace the tests create carries it, Kube.createNamespace), as a platform would.
            '--set-string',
            'redis.networkPolicy.namespaceSelector.matchLabels.portcullis\\.dev/e2e=true',
          ],
          { env },
        );
        await run(
          kubectl,
          [
            '--kubeconfig',
            kubeconfig,
            '-n',
            releaseNamespace,
            'rollout',
            'status',
            `deployment/${release}-operator`,
            '--timeout=180s',
          ],
          { env },
        );
      });

      const context: E2eContext = {
        engine,
        images,
        dockerHost: env['DOCKER_HOST'],
        cluster,
        node,
        kubeconfig,
        kubectl,
        helm,
        kind,
        kubernetesVersion,
        networkPolicyEnforcer: images === 'offline' ? 'kube-router' : 'kindnetd',
        releaseNamespace,
        release,
        tag,
        builtImages: built.map(({ id: _id, ...image }) => image),
        oauth2ProxyImage,
        caddyImage,
        issuerPort,
        timings,
      };
      writeFileSync(path.join(STATE, 'last-context.json'), JSON.stringify(context, null, 2));
      return {
        context,
        async teardown() {
          if (keep)
            log(
              `KEEP_CLUSTER=1: cluster ${cluster} and the engine stay up (kubeconfig ${kubeconfig}${env['DOCKER_HOST'] ? `, DOCKER_HOST=${env['DOCKER_HOST']}` : ''})`,
            );
          await deleteCluster();
          await stopEngine();
        },
      };
    } catch (err) {
      await deleteCluster().catch((e: unknown) => log(`deleting the cluster failed: ${String(e)}`));
      throw err;
    }
  } catch (err) {
    await stopEngine().catch((e: unknown) => log(`stopping the engine failed: ${String(e)}`));
    throw err;
  }
}

/** kind's cluster config: offline, the node image's own CNI; on a cgroup v1 host, kubelet told it may run. */
function kindConfig(offline: boolean): string {
  const cgroupV1 = !existsSync('/sys/fs/cgroup/cgroup.controllers');
  const lines = ['kind: Cluster', 'apiVersion: kind.x-k8s.io/v1alpha4'];
  // No kindnetd image can be made offline; the node image carries a ptp CNI config instead.
  if (offline) lines.push('networking:', '  disableDefaultCNI: true');
  if (cgroupV1) {
    // kubelet >= 1.35 refuses a cgroup v1 host unless told otherwise.
    lines.push(
      'kubeadmConfigPatches:',
      '- |',
      '  kind: KubeletConfiguration',
      '  failCgroupV1: false',
    );
  }
  return `${lines.join('\n')}\n`;
}

/** kube-router's firewall as a DaemonSet (kube-router.yaml; its image is preloaded in the offline node image). */
async function installKubeRouter(
  kubectl: string,
  kubeconfig: string,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const version = parseEnvLines(
    readFileSync(path.join(REPO, 'test/harness/k8s/versions.env'), 'utf8'),
  )['KUBE_ROUTER_VERSION'];
  if (version === undefined)
    throw new Error('test/harness/k8s/versions.env has no KUBE_ROUTER_VERSION');
  const manifest = readFileSync(path.join(HERE, 'kube-router.yaml'), 'utf8').replaceAll(
    'KUBE_ROUTER_VERSION',
    version,
  );
  await run(kubectl, ['--kubeconfig', kubeconfig, 'apply', '-f', '-'], { env, input: manifest });
  try {
    await run(
      kubectl,
      [
        '--kubeconfig',
        kubeconfig,
        '-n',
        'kube-system',
        'rollout',
        'status',
        'daemonset/kube-router',
        '--timeout=180s',
      ],
      { env },
    );
  } catch (err) {
    const logs = await run(
      kubectl,
      [
        '--kubeconfig',
        kubeconfig,
        '-n',
        'kube-system',
        'logs',
        'daemonset/kube-router',
        '--tail=40',
      ],
      { env },
    ).catch((e: unknown) => String(e));
    throw new Error(
      `kube-router did not become ready.\n${String(err)}\n--- kube-router (last lines) ---\n${logs}`,
    );
  }
}

async function kubeletTail(env: NodeJS.ProcessEnv, node: string): Promise<string> {
  try {
    return await run(
      'docker',
      ['exec', node, 'journalctl', '--no-pager', '-n', '60', '-u', 'kubelet', '-u', 'containerd'],
      { env },
    );
  } catch (err) {
    return `(could not read the node's journal: ${String(err).slice(0, 300)})`;
  }
}

/** exec a command without a shell; stdout only. For small helpers in test files. */
export function capture(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { env, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
  });
}
