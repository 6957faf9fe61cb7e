// `make run` description of the demo client: port 3000, the client secret shared by the auth
// server's local.ts, /me through the sidecar on 8080.
import type { LocalProgramFactory } from '../../lib/local-program.ts';

const port = 3000;

const demoClient: LocalProgramFactory = (ctx) => {
  const secret = ctx.shared.get('demoClientSecret');
  if (secret === undefined)
    throw new Error(
      'demo-client: the auth server did not share the demo client secret (start it first)',
    );
  return {
    name: 'demo-client',
    entry: 'services/demo-client/main.ts',
    port,
    env: {
      PORT: String(port),
      DEMO_ISSUER: ctx.shared.get('authIssuer') ?? 'http://localhost:9000',
      DEMO_CLIENT_ID: ctx.shared.get('demoClientId') ?? 'demo-client',
      DEMO_CLIENT_SECRET: secret,
      DEMO_REDIRECT_URI: `http://localhost:${port}/callback`,
      DEMO_ME_URL: 'http://localhost:8080/me',
    },
    notes: [`open http://localhost:${port} and press "Sign in" (alice / wonderland)`],
  };
};

export default demoClient;
