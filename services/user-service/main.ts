// User service entry point: the only place reading process.env; listens and shuts down gracefully.
import { serveUntilSignal } from '../../lib/web/serve.ts';
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

await serveUntilSignal(app, { port: config.PORT, host: config.HOST, log: app.log });
