// Runs a rendered Deployment's pod without a kubelet: the ConfigMap/Secret volumes are written
// where they would be mounted (mount paths rewritten into a temporary directory) and every
// container starts as a local process on the same Node (command ["node", entry] + args + env).
// Shared by the k8s tests that check the operator's pods are runnable. A pod has a network of its
// own and these processes share the host's: a named container port other than the first whose
// number the env passes in (the auth server's AUTH_METRICS_PORT) moves to a free local port.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { freePort } from '../harness/ports.ts';
import { startProgram, type Program } from '../harness/programs.ts';
import { kget, type OperatorEnv } from '../harness/k8s/operator-env.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl

const decode = (s: string) => Buffer.from(s, 'base64').toString('utf8');

export interface RunningPod {
  readonly programs: Program[];
  /** Mount path (as in the container) -> the local folder standing in for it. */
  readonly volumeDirs: Map<string, string>;
  /** Container port name -> the local port it listens on. */
  readonly ports: Map<string, number>;
}

export interface PodRunner {
  runPod(deploymentName: string): Promise<RunningPod>;
  /** Stops every started container (last first) and removes the folders. */
  stop(): Promise<void>;
}

export function createPodRunner(env: OperatorEnv, namespace: string): PodRunner {
  const programs: Program[] = [];
  const dirs: string[] = [];

  /** Files of one pod volume, as the kubelet would project them: path inside the mount -> content. */
  async function volumeFiles(volume: Obj): Promise<Map<string, string> | undefined> {
    const files = new Map<string, string>();
    if (volume['configMap'] !== undefined || volume['secret'] !== undefined) {
      const isSecret = volume['secret'] !== undefined;
      const source = volume['configMap'] ?? volume['secret'];
      const obj = (await kget(env.cluster, [
        '-n',
        namespace,
        isSecret ? 'secret' : 'configmap',
        source['name'] ?? source['secretName'],
      ])) as Obj;
      const data: Record<string, string> = obj['data'] ?? {};
      const items: Array<{ key: string; path: string }> =
        source['items'] ?? Object.keys(data).map((k) => ({ key: k, path: k }));
      for (const { key, path: p } of items)
        files.set(p, isSecret ? decode(data[key] ?? '') : (data[key] ?? ''));
      return files;
    }
    return volume['emptyDir'] !== undefined ? files : undefined;
  }

  async function runPod(deploymentName: string): Promise<RunningPod> {
    const dep = (await kget(env.cluster, ['-n', namespace, 'deployment', deploymentName])) as Obj;
    const pod = dep['spec']['template']['spec'];
    const root = mkdtempSync(path.join(tmpdir(), `pod-${deploymentName}-`));
    dirs.push(root);
    const volumeDirs = new Map<string, string>();
    const configFiles: Array<[string, string]> = []; // ConfigMap files: local path, content
    for (const volume of pod['volumes'] ?? []) {
      const files = await volumeFiles(volume);
      if (files === undefined) throw new Error(`volume ${volume['name']}: unsupported source`);
      const dir = path.join(root, volume['name']);
      mkdirSync(dir, { recursive: true });
      for (const [p, content] of files) {
        writeFileSync(path.join(dir, p), content);
        if (volume['configMap'] !== undefined) configFiles.push([path.join(dir, p), content]);
      }
      volumeDirs.set(volume['name'], dir);
    }
    const started: Program[] = [];
    const mountDirs = new Map<string, string>();
    const portsByName = new Map<string, number>();
    for (const c of pod['containers']) {
      const mounts: Array<[string, string]> = (c['volumeMounts'] ?? []).map((m: Obj) => [
        m['mountPath'],
        volumeDirs.get(m['name']) ?? '',
      ]);
      for (const [from, to] of mounts) mountDirs.set(from, to);
      // A config file naming another mounted file (e.g. the sidecar's redis.urlFile) gets the same
      // rewrite as args and env: the container path becomes the local folder standing in for it.
      for (const [file, content] of configFiles) {
        let next = content;
        for (const [from, to] of mounts)
          if (to !== '') next = next.split(`${from}/`).join(`${to}/`);
        if (next !== content) writeFileSync(file, next);
      }
      // The longest mount path containing the value wins, as in a container's filesystem; one rewrite only.
      const rewrite = (s: string) => {
        const mount = mounts
          .filter(([from]) => s === from || s.startsWith(`${from}/`))
          .sort((x, y) => y[0].length - x[0].length)[0];
        return mount === undefined ? s : mount[1] + s.slice(mount[0].length);
      };
      const [node, entry, ...restCommand] = c['command'] as string[];
      expect(node).toBe('node'); // the image/entry contract: command ["node", "<entry relative to /app>"]
      const envVars: Record<string, string> = {};
      for (const e of c['env'] ?? []) {
        if (typeof e['value'] === 'string') envVars[e['name']] = rewrite(e['value']);
        // A secretKeyRef, resolved as the kubelet does: the key of a Secret in the pod's namespace.
        const ref = e['valueFrom']?.['secretKeyRef'];
        if (ref !== undefined) {
          const secret = (await kget(env.cluster, ['-n', namespace, 'secret', ref['name']])) as
            Obj | undefined;
          const value = secret?.['data']?.[ref['key']];
          if (typeof value !== 'string')
            throw new Error(`env ${e['name']}: Secret ${ref['name']} has no key ${ref['key']}`);
          envVars[e['name']] = decode(value);
        }
      }
      for (const [i, p] of ((c['ports'] ?? []) as Obj[]).entries()) {
        const declared = String(p['containerPort']);
        const named = Object.keys(envVars).filter((k) => envVars[k] === declared);
        const local = i > 0 && named.length > 0 ? await freePort() : Number(declared);
        for (const k of named) envVars[k] = String(local);
        portsByName.set(String(p['name']), local);
      }
      const program = await startProgram({
        name: `${deploymentName}-${c['name']}`,
        entry: entry ?? '',
        args: [...restCommand, ...((c['args'] ?? []) as string[]).map(rewrite)],
        env: { ...envVars, NODE_ENV: 'test' },
        waitPort: c['ports'][0]['containerPort'],
      });
      programs.push(program);
      started.push(program);
    }
    return { programs: started, volumeDirs: mountDirs, ports: portsByName };
  }

  return {
    runPod,
    async stop() {
      for (const p of programs.splice(0).reverse()) await p.stop();
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    },
  };
}
