// What the e2e tests do to the kind cluster: kubectl with the run's kubeconfig, applying YAML,
// waiting on conditions, exec into pods, and port-forwards bound to 127.0.0.1 on free ports.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { stringify } from 'yaml';
import { freePort, waitForPort } from '../ports.ts';
import type { E2eContext } from './context.ts';

// The e2e tests take the one polling helper from here with the rest of the cluster access.
export { eventually } from '../eventually.ts';

export interface KubectlOptions {
  /** Text sent to kubectl's standard input. */
  readonly input?: string;
  /** Longest the command may take (ms); default 120 s. */
  readonly timeoutMs?: number;
}

export class KubectlError extends Error {
  readonly args: readonly string[];
  readonly stderr: string;
  readonly code: number | string | null;
  constructor(args: readonly string[], stderr: string, code: number | string | null) {
    super(`kubectl ${args.join(' ')} failed (${String(code)}): ${stderr.trim().slice(-2000)}`);
    this.args = args;
    this.stderr = stderr;
    this.code = code;
  }
}

export interface PortForward {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

export class Kube {
  readonly #forwards = new Set<ChildProcess>();
  readonly ctx: E2eContext;

  constructor(ctx: E2eContext) {
    this.ctx = ctx;
  }

  /** Runs kubectl with the run's kubeconfig; resolves with its stdout, throws KubectlError otherwise. */
  kubectl(args: readonly string[], options: KubectlOptions = {}): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        this.ctx.kubectl,
        ['--kubeconfig', this.ctx.kubeconfig, ...args],
        { maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 120_000, encoding: 'utf8' },
        (err, stdout, stderr) => {
          if (err)
            reject(
              new KubectlError(
                args,
                stderr || err.message,
                (err as NodeJS.ErrnoException).code ?? null,
              ),
            );
          else resolve(stdout);
        },
      );
      child.stdin?.end(options.input ?? '');
    });
  }

  async json<T = Record<string, unknown>>(args: readonly string[]): Promise<T> {
    return JSON.parse(await this.kubectl([...args, '-o', 'json'])) as T;
  }

  /** Server-side apply of objects (as YAML documents) with the tests' own field manager. */
  async apply(objects: readonly object[], namespace?: string): Promise<void> {
    const text = objects.map((o) => stringify(o)).join('---\n');
    await this.kubectl(
      [
        'apply',
        '--server-side',
        '--force-conflicts',
        '--field-manager=portcullis-e2e',
        ...(namespace ? ['-n', namespace] : []),
        '-f',
        '-',
      ],
      { input: text },
    );
  }

  async createNamespace(name: string): Promise<void> {
    await this.apply([
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { 'portcullis.dev/e2e': 'true' } },
      },
    ]);
  }

  async deleteNamespace(name: string): Promise<void> {
    await this.kubectl(['delete', 'namespace', name, '--ignore-not-found', '--wait=false']);
  }

  /** kubectl wait --for=... (a condition, jsonpath or delete) on one object or a selection. */
  async wait(
    namespace: string,
    what: readonly string[],
    condition: string,
    timeoutS = 180,
  ): Promise<void> {
    await this.kubectl(
      ['-n', namespace, 'wait', ...what, `--for=${condition}`, `--timeout=${timeoutS}s`],
      { timeoutMs: (timeoutS + 10) * 1000 },
    );
  }

  async rolloutStatus(namespace: string, deployment: string, timeoutS = 300): Promise<void> {
    await this.kubectl(
      ['-n', namespace, 'rollout', 'status', `deployment/${deployment}`, `--timeout=${timeoutS}s`],
      { timeoutMs: (timeoutS + 10) * 1000 },
    );
  }

  /** Runs a command in a container; stdin optional. */
  exec(
    namespace: string,
    pod: string,
    command: readonly string[],
    options: KubectlOptions & { container?: string } = {},
  ): Promise<string> {
    return this.kubectl(
      [
        '-n',
        namespace,
        'exec',
        ...(options.input === undefined ? [] : ['-i']),
        pod,
        ...(options.container ? ['-c', options.container] : []),
        '--',
        ...command,
      ],
      options,
    );
  }

  /** Logs of a pod's container (all of it). */
  logs(namespace: string, target: string, container?: string, previous = false): Promise<string> {
    return this.kubectl([
      '-n',
      namespace,
      'logs',
      target,
      ...(container ? ['-c', container] : []),
      ...(previous ? ['--previous'] : []),
    ]);
  }

  /**
   * kubectl port-forward to a Service or pod on 127.0.0.1 only. The local port is a free one
   * chosen now unless given; the forward is checked by a TCP connect before this resolves.
   */
  async portForward(
    namespace: string,
    target: string,
    remotePort: number,
    localPort?: number,
  ): Promise<PortForward> {
    const port = localPort ?? (await freePort());
    const child = spawn(
      this.ctx.kubectl,
      [
        '--kubeconfig',
        this.ctx.kubeconfig,
        '-n',
        namespace,
        'port-forward',
        '--address',
        '127.0.0.1',
        target,
        `${port}:${remotePort}`,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    this.#forwards.add(child);
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await Promise.race([
        waitForPort(port, 30_000),
        exited.then(() => {
          throw new Error(`port-forward ${target} ${port}:${remotePort} exited: ${output.trim()}`);
        }),
      ]);
      // "Forwarding from 127.0.0.1:PORT": it bound the address asked for, not [::1] alone.
      if (!output.includes(`127.0.0.1:${port}`)) {
        await new Promise((r) => setTimeout(r, 200));
        if (!output.includes(`127.0.0.1:${port}`))
          throw new Error(`port-forward did not bind 127.0.0.1:${port}: ${output.trim()}`);
      }
    } catch (err) {
      child.kill('SIGTERM');
      this.#forwards.delete(child);
      throw err;
    }
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      this.#forwards.delete(child);
    };
    return { url: `http://127.0.0.1:${port}`, port, stop };
  }

  /** Stops every port-forward this Kube started (afterAll). */
  async close(): Promise<void> {
    await Promise.all(
      [...this.#forwards].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
    this.#forwards.clear();
  }
}
