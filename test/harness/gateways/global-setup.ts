// vitest globalSetup of the integration tier: builds (once, cached outside the repository) the
// real gateway peers the decision-service tests run: Caddy from its Go module and the gRPC
// ext_authz client from Envoy's published API. A no-op when both are cached.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../programs.ts';

export default function setup(): void {
  for (const script of ['build-caddy.sh', 'build-ext-authz-client.sh']) {
    execFileSync(path.join(repoRoot, 'test/harness/gateways', script), {
      cwd: repoRoot,
      stdio: 'inherit',
    });
  }
}
