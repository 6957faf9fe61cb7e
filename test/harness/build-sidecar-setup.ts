// vitest globalSetup of the integration and k8s projects: bundle the sidecar (dist/sidecar/main.mjs)
// from the current sources before any test file starts, so that the tests that run the sidecar as
// it is deployed (the rendered pods, the soak) never run a stale bundle. Takes about a second.
import { execFileSync } from 'node:child_process';
import { repoRoot } from './programs.ts';

export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build-sidecar.ts'], { cwd: repoRoot, stdio: 'inherit' });
}
