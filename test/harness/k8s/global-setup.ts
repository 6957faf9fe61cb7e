// vitest globalSetup of the k8s project: make sure the cached tools exist before any test file
// starts a cluster. build-tools.sh is a no-op (well under a second) when everything is cached and
// builds what is missing otherwise (first run on a fresh machine: tens of minutes on 2 cores).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'build-tools.sh');
  execFileSync(script, [], { stdio: 'inherit' });
}
