// The contract between `make run` (scripts/run-local.ts) and each program: a program folder
// holds a `local.ts` whose default export describes how to run it on this machine with the
// embedded defaults. Each program owns its own local wiring; run-local only starts processes.

export interface LocalContext {
  /** The environment `make run` was started with (REDIS_URL, REPLENISH_RATE, ...). */
  readonly env: NodeJS.ProcessEnv;
  /** A private temporary folder for generated config files, removed on exit. */
  readonly workDir: string;
  /** Shared values that one program produces for another (e.g. the demo client's secret). */
  readonly shared: Map<string, string>;
}

export interface LocalProgram {
  readonly name: string;
  /** Entry file relative to the repository root. */
  readonly entry: string;
  readonly port: number;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** One or more lines printed in the start-up banner (what it is, how to try it). */
  readonly notes: readonly string[];
}

export type LocalProgramFactory = (ctx: LocalContext) => LocalProgram | Promise<LocalProgram>;
