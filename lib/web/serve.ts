// How every fastify service (user-service, auth-server, demo-client) runs: listen, and on SIGTERM
// or SIGINT close the server (in-flight requests finish), release what it holds, exit 0.
import type { FastifyInstance } from 'fastify';

interface Log {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface ServeOptions {
  readonly port: number;
  readonly host: string;
  readonly log: Log;
  /** Released after the server closed (stores, connections). */
  readonly release?: () => Promise<unknown>;
}

/** Resolves once listening; exits the process with 1 when the port cannot be bound. */
export async function serveUntilSignal(app: FastifyInstance, options: ServeOptions): Promise<void> {
  const { log } = options;
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    app
      .close()
      .then(() => options.release?.())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  try {
    await app.listen({ port: options.port, host: options.host });
  } catch (err) {
    log.error({ err }, 'could not listen');
    process.exit(1);
  }
}
