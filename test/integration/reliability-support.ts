// Set-up shared by the fuzz and soak suites (issue 6): a real sidecar process with a full config
// (including listen.headersTimeoutMs, which sidecar-support's helper does not expose), its admin
// port, and small polling helpers.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { freePort } from '../harness/ports.ts';
import { startProgram, type Program, type StartOptions } from '../harness/programs.ts';

export interface SidecarProcess {
  readonly program: Program;
  readonly port: number;
  readonly adminPort: number;
  readonly url: string;
  readonly configFile: string;
  config: SidecarConfigInput;
  /** Rewrites the config file (the sidecar hot-reloads it). */
  write(config: SidecarConfigInput): void;
}

/**
 * How the process starts: `entry` is the sources by default, or the deployed bundle; `env`, `node`
 * and `launcher` as for startProgram.
 */
export type SidecarProcessOptions = Partial<Pick<StartOptions, 'entry' | 'env' | 'node' | 'launcher' | 'waitPortMs'>>;

export async function startSidecarProcess(
  config: Omit<SidecarConfigInput, 'listen' | 'admin'> & { listen?: Partial<NonNullable<SidecarConfigInput['listen']>> },
  name = 'sidecar',
  options: SidecarProcessOptions = {},
): Promise<SidecarProcess> {
  const port = await freePort();
  const adminPort = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-reliability-'));
  const configFile = path.join(dir, 'sidecar.yaml');
  const full: SidecarConfigInput = {
    ...config,
    listen: { host: '127.0.0.1', ...config.listen, port },
    admin: { host: '127.0.0.1', port: adminPort },
  };
  writeFileSync(configFile, stringify(full));
  const program = await startProgram({ ...options, entry: options.entry ?? 'sidecar/main.ts', args: ['--config', configFile], waitPort: port, name });
  const handle: SidecarProcess = {
    program,
    port,
    adminPort,
    url: `http://127.0.0.1:${port}`,
    configFile,
    config: full,
    write(next) {
      handle.config = next;
      writeFileSync(configFile, stringify(next));
    },
  };
  return handle;
}

/** Polls until fn() resolves truthy, or throws after timeoutMs. */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs: number, what: string): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch {
      // retry
    }
    if (performance.now() > deadline) throw new Error(`${what}: not true within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** GET the admin /healthz: true when the process answers. */
export async function healthy(adminPort: number): Promise<boolean> {
  const r = await fetch(`http://127.0.0.1:${adminPort}/healthz`, { signal: AbortSignal.timeout(2000) });
  return r.status === 200;
}
