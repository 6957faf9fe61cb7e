// Runs the project's own programs (sidecar, services, operator) as real child processes on the
// same Node binary as the tests, with their logs kept for assertions and for test-results/.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import type { SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { freePort, waitForPort } from './ports.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface Program {
  readonly name: string;
  readonly child: ChildProcess;
  /** Every line the program wrote to stdout or stderr so far. */
  readonly lines: string[];
  /** True once the process has exited (for "the sidecar never exits" assertions). */
  exited(): boolean;
  /** Resolves with the first line (already written or future) that matches, or rejects after timeoutMs. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends a signal and waits for the exit; SIGKILL after graceMs. Returns the exit code or signal. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | string | null>;
}

export interface StartOptions {
  /** Path of the entry file relative to the repository root, e.g. `sidecar/main.ts`. */
  entry: string;
  args?: string[];
  env?: Record<string, string>;
  /** Wait until this port accepts connections before resolving. */
  waitPort?: number;
  /** How long to wait for waitPort (default 20 s; a program under valgrind starts ~50x slower). */
  waitPortMs?: number;
  name?: string;
  /** The Node binary to run (default: the one running the tests). */
  node?: string;
  /** A program that is not a Node entry (nginx, Caddy): run it with `args`; `entry` only names the log. */
  executable?: string;
  /** A command that ends by exec-ing its arguments (`sh -c '...; exec "$@"' sh`), put before the Node binary. */
  launcher?: string[];
}

/** Every program started in this test file (the log scanner in reliability-setup.ts reads their lines). */
export const startedPrograms: Program[] = [];

export async function startProgram(options: StartOptions): Promise<Program> {
  const name = options.name ?? path.basename(path.dirname(options.entry));
  const logDir = path.join(repoRoot, 'test-results', 'logs');
  mkdirSync(logDir, { recursive: true });
  const log = createWriteStream(path.join(logDir, `${name}-${process.pid}-${Date.now()}.log`));
  const program_ =
    options.executable === undefined
      ? [options.node ?? process.execPath, path.join(repoRoot, options.entry)]
      : [options.executable];
  const command = [...(options.launcher ?? []), ...program_, ...(options.args ?? [])];
  const child = spawn(command[0] as string, command.slice(1), {
    cwd: repoRoot,
    env: { ...process.env, NODE_ENV: 'test', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const watchers = new Set<{ pattern: RegExp; resolve: (line: string) => void }>();
  const onData = (chunk: Buffer) => {
    log.write(chunk);
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line === '') continue;
      lines.push(line);
      for (const w of watchers) {
        if (w.pattern.test(line)) {
          watchers.delete(w);
          w.resolve(line);
        }
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  let exitInfo: number | string | null | undefined;
  const exitPromise = new Promise<number | string | null>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = code ?? signal;
      log.end();
      resolve(exitInfo);
    });
  });

  const program: Program = {
    name,
    child,
    lines,
    exited: () => exitInfo !== undefined,
    waitForLine(pattern, timeoutMs = 15_000) {
      const existing = lines.find((l) => pattern.test(l));
      if (existing !== undefined) return Promise.resolve(existing);
      return new Promise((resolve, reject) => {
        const watcher = { pattern, resolve };
        watchers.add(watcher);
        setTimeout(() => {
          if (watchers.delete(watcher)) {
            reject(
              new Error(
                `${name}: no line matching ${pattern} within ${timeoutMs} ms; last lines:\n${lines.slice(-20).join('\n')}`,
              ),
            );
          }
        }, timeoutMs).unref();
      });
    },
    async stop(signal = 'SIGTERM', graceMs = 10_000) {
      if (exitInfo !== undefined) return exitInfo;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const result = await exitPromise;
      clearTimeout(timer);
      return result;
    },
  };

  startedPrograms.push(program);
  if (options.waitPort !== undefined) {
    try {
      await Promise.race([
        waitForPort(options.waitPort, options.waitPortMs ?? 20_000),
        exitPromise.then((code) => {
          throw new Error(
            `${name} exited with ${String(code)} before listening:\n${lines.join('\n')}`,
          );
        }),
      ]);
    } catch (err) {
      await program.stop('SIGKILL');
      throw err;
    }
  }
  return program;
}

/** A sidecar's config without the ports: startSidecar picks free ones (listen may set its timeouts). */
export type SidecarConfig = Omit<SidecarConfigInput, 'listen' | 'admin'> & {
  listen?: Partial<NonNullable<SidecarConfigInput['listen']>>;
};

/**
 * How a sidecar process starts: `entry` is the sources by default, or the deployed bundle; `env`,
 * `node`, `launcher` and `waitPortMs` as for startProgram; `name` names its log.
 */
export type SidecarLaunch = Partial<
  Pick<StartOptions, 'entry' | 'env' | 'node' | 'launcher' | 'waitPortMs' | 'name'>
>;

export interface RunningSidecar {
  readonly program: Program;
  readonly port: number;
  readonly adminPort: number;
  /** Base URL of its listener. */
  readonly url: string;
  readonly configFile: string;
  /** The config as last written (with the ports filled in). */
  config: SidecarConfigInput;
  /** Rewrites the config file, which the sidecar hot-reloads; a string is written as it is (e.g. broken YAML). */
  write(config: SidecarConfigInput | string): void;
}

/** A sidecar process on free loopback ports (listener and admin), its config in a temp folder. */
export async function startSidecar(
  config: SidecarConfig,
  launch: SidecarLaunch = {},
): Promise<RunningSidecar> {
  const port = await freePort();
  const adminPort = await freePort();
  const configFile = path.join(
    mkdtempSync(path.join(tmpdir(), 'portcullis-sidecar-')),
    'sidecar.yaml',
  );
  const full: SidecarConfigInput = {
    ...config,
    listen: { host: '127.0.0.1', ...config.listen, port },
    admin: { host: '127.0.0.1', port: adminPort },
  };
  writeFileSync(configFile, stringify(full));
  const program = await startProgram({
    ...launch,
    entry: launch.entry ?? 'sidecar/main.ts',
    args: ['--config', configFile],
    waitPort: port,
    name: launch.name ?? 'sidecar',
  });
  const sidecar: RunningSidecar = {
    program,
    port,
    adminPort,
    url: `http://127.0.0.1:${port}`,
    configFile,
    config: full,
    write(next) {
      if (typeof next === 'string') {
        writeFileSync(configFile, next);
        return;
      }
      sidecar.config = next;
      writeFileSync(configFile, stringify(next));
    },
  };
  return sidecar;
}

export interface RunningService {
  readonly program: Program;
  readonly port: number;
  readonly url: string;
}

/** The demo user service (services/user-service) on a free loopback port; `env` adds to PORT and HOST. */
export async function startUserService(
  env: Record<string, string> = { LOG_LEVEL: 'warn' },
): Promise<RunningService> {
  const port = await freePort();
  const program = await startProgram({
    entry: 'services/user-service/main.ts',
    env: { PORT: String(port), HOST: '127.0.0.1', ...env },
    waitPort: port,
    name: 'user-service',
  });
  return { program, port, url: `http://127.0.0.1:${port}` };
}
