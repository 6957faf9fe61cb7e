// User service entry point: the only place reading process.env; listens and shuts down gracefully.
import { buildApp } from './app.ts';
import { createAccessTokenVerifier } from './routes/me.ts';
import { loadUserServiceConfig } from './config.ts';

const config = loadUserServiceConfig(process.env);
const verifyAccessToken = createAccessTokenVerifier({
  issuer: config.AUTH_ISSUER,
  audience: config.AUTH_AUDIENCE,
  jwksUrl: config.AUTH_JWKS_URL ?? `${config.AUTH_ISSUER.replace(/\/+$/, '')}/jwks.json`,
});
const app = await buildApp({ logger: { level: config.LOG_LEVEL }, verifyAccessToken });

let closing = false;
const shutdown = (signal: string) => {
  if (closing) return;
  closing = true;
  app.log.info({ signal }, 'shutting down');
  app.close().then(
    () => process.exit(0),
    (err: unknown) => {
      app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    },
  );
};
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));

try {
  await app.listen({ port: config.PORT, host: config.HOST });
} catch (err) {
  app.log.error({ err }, 'could not listen');
  process.exit(1);
}
