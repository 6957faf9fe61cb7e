// User-service configuration: parsed once at start with zod from the environment (main.ts passes
// process.env in; nothing else reads it).
import { z } from 'zod';

export const userServiceConfigSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8081).describe('TCP port to listen on'),
  HOST: z.string().min(1).default('0.0.0.0').describe('Address to bind'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // Resource server (GET /me): access tokens are verified against the auth server's JWKS.
  AUTH_ISSUER: z.url().default('http://localhost:9000').describe('Expected iss of access tokens'),
  AUTH_JWKS_URL: z
    .url()
    .optional()
    .describe('JWKS of the auth server; default <AUTH_ISSUER>/jwks.json'),
  AUTH_AUDIENCE: z
    .string()
    .min(1)
    .default('urn:portcullis:user-service')
    .describe('Expected aud of access tokens'),
});

export type UserServiceConfig = z.infer<typeof userServiceConfigSchema>;

/** Parses the environment; throws an Error naming each invalid field. */
export function loadUserServiceConfig(env: Record<string, string | undefined>): UserServiceConfig {
  const result = userServiceConfigSchema.safeParse(env);
  if (!result.success) {
    const detail = result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid user-service configuration: ${detail}`);
  }
  return result.data;
}
