// Test helper (not a test file): the chart as `helm template` renders it with the cached helm, for
// the linters and admission checks that read every object it makes, and the values that turn
// every option on at once.
import { spawnSync } from 'node:child_process';
import { expect } from 'vitest';
import { k8sTools } from '../harness/k8s/cluster.ts';

/** `helm template` of charts/portcullis with `args`; fails the test when helm does. */
export function helmTemplate(args: readonly string[] = []): string {
  const tools = k8sTools();
  const res = spawnSync(
    tools.helm,
    [
      'template',
      'portcullis',
      'charts/portcullis',
      '--namespace',
      'portcullis-system',
      '--kube-version',
      tools.kubernetesVersion,
      '--set',
      'images.tag=0.1.0',
      ...args,
    ],
    { encoding: 'utf8' },
  );
  expect(res.status, res.stderr).toBe(0);
  return res.stdout;
}

/**
 * Values with every operator-pod option on: two replicas, the rendered pods' priority class, labels,
 * spread, a digest, extra env. (Not operator.priorityClassName: a Pod naming a class the cluster
 * lacks is refused by the API server, so only the linter adds it.)
 */
export const OPERATOR_EVERY_OPTION: readonly string[] = [
  '--set',
  'operator.replicas=2',
  '--set',
  'priorityClassName=platform',
  '--set',
  'operator.podLabels.team=platform',
  '--set',
  'operator.topologySpreadConstraints[0].maxSkew=1',
  '--set',
  'operator.topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone',
  '--set',
  'operator.topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway',
  '--set',
  `images.operator.digest=sha256:${'a'.repeat(64)}`,
  '--set',
  'operator.extraEnv[0].name=HTTPS_PROXY',
  '--set',
  'operator.extraEnv[0].value=http://proxy:3128',
];
