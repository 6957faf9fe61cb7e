// vitest globalSetup of the k8s project: make sure the cached tools exist before any test file
// starts a cluster. build-tools.sh is a no-op (well under a second) when everything is cached and
// builds what is missing otherwise (first run on a fresh machine: tens of minutes on 2 cores).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const here = path.dirname(fileURLToPath(import.meta.url));
  execFileSync(path.join(here, 'build-tools.sh'), [], { stdio: 'inherit' });
  // Gateway API's CRD manifests (the RateLimitPolicy tests), fetched once through the Go module proxy.
  execFileSync(path.join(here, 'gateway-api-crds.sh'), [], { stdio: 'inherit' });
}
