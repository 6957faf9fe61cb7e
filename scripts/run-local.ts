// `make run`: the local stack on embedded defaults. Starts each program's
// local.ts description as a child process in order, prints what runs where, forwards Ctrl-C and
// stops everything cleanly. Any program exiting on its own stops the stack with its exit code.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LocalContext, LocalProgram, LocalProgramFactory } from '../lib/local-program.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Start order: each program may read values `shared` by the ones before it. */
const programs = [
  'services/user-service/local.ts',
  'sidecar/local.ts',
  'services/auth-server/local.ts',
  'services/demo-client/local.ts',
];

async function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`exited with code ${child.exitCode} before listening`);
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect({ port, host: '127.0.0.1' });
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on port ${port} after ${timeoutMs} ms`);
}

async function main(): Promise<void> {
  const workDir = mkdtempSync(path.join(tmpdir(), 'portcullis-run-'));
  const ctx: LocalContext = { env: process.env, workDir, shared: new Map() };
  const running: { program: LocalProgram; child: ChildProcess }[] = [];
  let stopping = false;

  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log('\nstopping the local stack ...');
    await Promise.all(
      running.reverse().map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
            child.once('exit', () => (clearTimeout(timer), resolve()));
            child.kill('SIGTERM');
          }),
      ),
    );
    rmSync(workDir, { recursive: true, force: true });
    console.log('stopped.');
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  for (const file of programs) {
    const full = path.join(root, file);
    if (!existsSync(full)) {
      console.warn(`run-local: ${file} is missing; that program is not started`);
      continue;
    }
    const mod = (await import(full)) as { default: LocalProgramFactory };
    const program = await mod.default(ctx);
    const child = spawn(
      process.execPath,
      [path.join(root, program.entry), ...(program.args ?? [])],
      {
        cwd: root,
        env: { ...process.env, ...program.env },
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    running.push({ program, child });
    child.once('exit', (code, signal) => {
      if (stopping) return;
      console.error(`run-local: ${program.name} exited (${code ?? signal}); stopping the stack`);
      void stopAll(code === 0 || code === null ? 1 : code);
    });
    try {
      await waitForPort(program.port, child, 20_000);
    } catch (err) {
      console.error(`run-local: ${program.name} did not start: ${(err as Error).message}`);
      await stopAll(1);
      return;
    }
  }

  const banner = ['', 'Portcullis local stack is up:', ''];
  for (const { program } of running) {
    banner.push(`  ${program.name.padEnd(13)} http://localhost:${program.port}`);
    for (const note of program.notes) banner.push(`  ${''.padEnd(13)} ${note}`);
  }
  banner.push('', 'Ctrl-C stops everything.', '');
  console.log(banner.join('\n'));
}

main().catch((err: unknown) => {
  console.error('run-local:', err);
  process.exit(1);
});
