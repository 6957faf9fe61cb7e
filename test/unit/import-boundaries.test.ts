// The lint rule that keeps programs apart: each program imports its own folder and lib/, lib/
// imports no program, no production code imports test support, and tests may import anything.
// Linted as if the code sat at each path.
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../harness/programs.ts';

const eslint = new ESLint({ cwd: repoRoot });

/** The messages of the boundary rule for `code` placed at `filePath` (relative to the repository). */
async function boundaryErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${repoRoot}/${filePath}` });
  return (result?.messages ?? [])
    .filter((m) => m.ruleId === 'no-restricted-imports')
    .map((m) => m.message);
}

describe('import boundaries between programs', () => {
  it.each([
    ['operator/resources/x.ts', "import { parseSidecarConfig } from '../../sidecar/app.ts';"],
    ['sidecar/x.ts', "import { grants } from '../services/auth-server/grants/registry.ts';"],
    [
      'services/demo-client/x.ts',
      "import { sendSignInPage } from '../auth-server/pages/sign-in-page.ts';",
    ],
    [
      'services/auth-server/stores/x.ts',
      "import { createStore } from '../../../sidecar/create-store.ts';",
    ],
    ['lib/token-bucket/x.ts', "import { buildApp } from '../../sidecar/app.ts';"],
  ])('%s may not import %s', async (file, code) => {
    expect(await boundaryErrors(file, code)).toEqual([
      expect.stringContaining('imports only its own files and lib/'),
    ]);
  });

  it.each([
    [
      'operator/runtime/x.ts',
      "import { MemoryKubeClient } from '../../test/harness/memory-kube-client.ts';",
    ],
    [
      'operator/main.ts',
      "import { MemoryKubeClient } from '../test/harness/memory-kube-client.ts';",
    ],
    ['sidecar/x.ts', "import { startRedis } from '../test/harness/redis.ts';"],
    [
      'services/auth-server/stores/x.ts',
      "import { fixtures } from '../../../test/unit/operator-fixtures.ts';",
    ],
    ['lib/config/x.ts', "import { ManualClock } from '../../test/harness/manual-clock.ts';"],
  ])('production code %s may not import test support: %s', async (file, code) => {
    expect(await boundaryErrors(file, code)).toEqual([
      expect.stringContaining('never imports test support'),
    ]);
  });

  it.each([
    ['test/unit/x.ts', "import { median } from '../../bench/lib/measure.ts';"],
    ['test/integration/x.ts', "import { runGatewayBench } from '../../bench/gateway.ts';"],
  ])('%s may not import %s', async (file, code) => {
    expect(await boundaryErrors(file, code)).toEqual([
      expect.stringContaining('tests never import bench/'),
    ]);
  });

  it.each([
    [
      'operator/resources/x.ts',
      "import { parseSidecarConfig } from '../../lib/config/sidecar.ts';",
    ],
    ['services/auth-server/x.ts', "import { take } from '../../lib/token-bucket/bucket.ts';"],
    ['sidecar/x.ts', "import { buildApp } from './app.ts';"],
    ['test/unit/x.ts', "import { buildApp } from '../../sidecar/app.ts';"],
    ['bench/x.ts', "import { startRedis } from '../test/harness/redis.ts';"],
    ['scripts/x.ts', "import { startRedis } from '../test/harness/redis.ts';"],
  ])('%s may import %s', async (file, code) => {
    expect(await boundaryErrors(file, code)).toEqual([]);
  });
});
