// Demo-client configuration (zod, from the environment; main.ts passes process.env in).
import { z } from 'zod';

export const demoClientConfigSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  DEMO_ISSUER: z
    .url()
    .default('http://localhost:9000')
    .describe('The auth server (issuer); metadata is discovered from it'),
  DEMO_CLIENT_ID: z.string().min(1).default('demo-client'),
  DEMO_CLIENT_SECRET: z
    .string()
    .min(1)
    .describe('The client secret (make run passes the generated one)'),
  DEMO_CLIENT_AUTH: z
    .enum(['client_secret_post', 'client_secret_basic'])
    .default('client_secret_post'),
  DEMO_REDIRECT_URI: z.url().default('http://localhost:3000/callback'),
  DEMO_SCOPE: z
    .string()
    .min(1)
    .default('openid profile email groups')
    .describe('With openid the client signs in with OpenID Connect (nonce, id_token)'),
  DEMO_ME_URL: z
    .url()
    .default('http://localhost:8080/me')
    .describe('GET /me of the user service, through the sidecar'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});
export type DemoClientConfig = z.infer<typeof demoClientConfigSchema>;

export function loadDemoClientConfig(env: Record<string, string | undefined>): DemoClientConfig {
  const result = demoClientConfigSchema.safeParse(env);
  if (!result.success) {
    throw new Error(
      `invalid demo-client configuration: ${result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  return result.data;
}
