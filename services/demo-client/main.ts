// Demo-client entry point: the only place reading process.env; listens and shuts down gracefully.
import pino from 'pino';
import { buildApp } from './app.ts';
import { loadDemoClientConfig } from './config.ts';
import { createOAuthClient } from './oauth.ts';

const config = loadDemoClientConfig(process.env);
const log = pino({ level: config.LOG_LEVEL, base: { service: 'demo-client' } });
const app = await buildApp({ oauth: createOAuthClient(config), issuer: config.DEMO_ISSUER.replace(/\/+$/, ''), meUrl: config.DEMO_ME_URL, now: () => Date.now(), logger: log });

let closing = false;
const shutdown = (signal: string) => {
  if (closing) return;
  closing = true;
  log.info({ signal }, 'shutting down');
  app.close().then(
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
  await app.listen({ port: config.PORT, host: config.HOST });
} catch (err) {
  log.error({ err }, 'could not listen');
  process.exit(1);
}
