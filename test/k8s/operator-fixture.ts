// The k8s tier's per-file operator fixture. Kept apart from operator-env.ts, which the operator
// benchmark imports too and so must not load vitest.
import { perDescribe, standIn } from '../harness/fixtures.ts';
import {
  eventually,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';

/**
 * A file's API server (with the CRDs and the chart's RBAC) and one operator on it, ready: started
 * before the file's first test and stopped after its last, the operator first.
 */
export function operatorOnApiServer(
  namespaces: readonly string[],
  identity: string,
  extra: Record<string, string> = {},
  helmSet: readonly string[] = [],
): { env: OperatorEnv; operator: RunningOperator } {
  const running = perDescribe(async (start) => {
    const env = await startOperatorEnv(namespaces, helmSet);
    start.defer(() => env.stop());
    const operator = await startOperator(env, identity, extra);
    start.defer(() => operator.program.stop());
    await eventually('operator ready', async () => (await operator.readyz()).startsWith('ok'));
    return { env, operator };
  });
  return { env: standIn(() => running.env), operator: standIn(() => running.operator) };
}
