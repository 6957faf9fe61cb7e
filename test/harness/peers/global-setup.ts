// vitest globalSetup of the browser tier: builds (once, cached outside the repository) the real
// relying-party peers its tests run: oauth2-proxy from its Go module. A no-op when it is cached.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../programs.ts';

export default function setup(): void {
  execFileSync(path.join(repoRoot, 'test/harness/peers/build-oauth2-proxy.sh'), {
    cwd: repoRoot,
    stdio: 'inherit',
  });
}
