// vitest globalSetup of the integration and k8s projects: bundle the sidecar, the operator and the
// auth server (dist/<program>/main.mjs) from the current sources before any test file starts, so
// that the tests that run them as deployed (the rendered pods, the soak) never run a stale bundle.
// Takes a few seconds.
import { execFileSync } from 'node:child_process';
import { repoRoot } from './programs.ts';

export default function setup(): void {
  // The three the tiers run as deployed; the example services' bundles are the e2e tier's business.
  execFileSync(
    process.execPath,
    ['scripts/build-programs.ts', 'sidecar', 'operator', 'auth-server'],
    { cwd: repoRoot, stdio: 'inherit' },
  );
}
