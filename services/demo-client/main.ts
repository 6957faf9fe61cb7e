// Demo-client entry point: the only place reading process.env; listens and shuts down gracefully.
import pino from 'pino';
import { serveUntilSignal } from '../../lib/web/serve.ts';
import { buildApp } from './app.ts';
import { loadDemoClientConfig } from './config.ts';
import { createOAuthClient } from './oauth.ts';

const config = loadDemoClientConfig(process.env);
const log = pino({ level: config.LOG_LEVEL, base: { service: 'demo-client' } });
const app = await buildApp({
  oauth: createOAuthClient(config),
  issuer: config.DEMO_ISSUER.replace(/\/+$/, ''),
  meUrl: config.DEMO_ME_URL,
  now: () => Date.now(),
  logger: log,
});

await serveUntilSignal(app, { port: config.PORT, host: config.HOST, log });
