// kube-controller-manager beside a test cluster, running only the controllers a test names
// (e.g. clusterrole-aggregation, which fills the built-in admin/edit/view roles from the
// ClusterRoles labelled to aggregate into them). The binary is built with the other Kubernetes
// commands by build-tools.sh. No HTTPS port (--secure-port=0), no leader election.
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Cluster } from './cluster.ts';

export interface ControllerManager {
  /** The last lines of its log, for assertion messages. */
  log(): string;
  stop(): Promise<void>;
}

export function startControllerManager(
  cluster: Cluster,
  controllers: readonly string[],
): ControllerManager {
  const bin = path.join(path.dirname(cluster.tools.kubectl), 'kube-controller-manager');
  const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-kcm-'));
  const logFile = path.join(dir, 'kube-controller-manager.log');
  const fd = openSync(logFile, 'a');
  const child = spawn(
    bin,
    [
      `--kubeconfig=${cluster.kubeconfigPath}`,
      `--controllers=${controllers.join(',')}`,
      '--leader-elect=false',
      '--secure-port=0',
    ],
    { stdio: ['ignore', fd, fd] },
  );
  closeSync(fd);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    log: () => readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n'),
    async stop() {
      process.off('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
