// Images of the peers the e2e tests run beside the project's own programs: oauth2-proxy, built
// from its Go module by test/harness/peers/build-oauth2-proxy.sh (cached by version, shared with
// the browser tier). Its binary is static (CGO off), so the image is that one file with a passwd
// entry and a /tmp, made by `docker import` from a folder: no base image, no registry, the same
// with the private engine offline and with a Docker engine of one's own. Tagged by the binary's
// content, so a cached image is never stale; `kind load` skips an image the node already has.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../programs.ts';

export const OAUTH2_PROXY_REPOSITORY = 'portcullis-e2e/oauth2-proxy';
/** The non-root user the image runs as (distroless's "nonroot"). */
export const OAUTH2_PROXY_UID = 65532;

function exec(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env, cwd: repoRoot, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) =>
      err ? reject(new Error(`${path.basename(command)} ${args.join(' ')} failed: ${err.message}\n${stderr.slice(-2000)}`)) : resolve(stdout),
    );
  });
}

/** The oauth2-proxy binary, built first when the cache lacks it (minutes, once). */
async function oauth2ProxyBinary(env: NodeJS.ProcessEnv): Promise<string> {
  const out = await exec(path.join(repoRoot, 'test/harness/peers/build-oauth2-proxy.sh'), ['--print-env'], env);
  const line = out.split('\n').find((l) => l.startsWith('OAUTH2_PROXY='));
  if (line === undefined) throw new Error('build-oauth2-proxy.sh printed no OAUTH2_PROXY=');
  return line.slice('OAUTH2_PROXY='.length);
}

/**
 * Builds (when missing) the oauth2-proxy image in the engine at DOCKER_HOST and loads it into
 * the kind cluster's node. Returns the image name, e.g. portcullis-e2e/oauth2-proxy:v7.15.6-1a2b3c4d5e.
 */
export async function loadOAuth2ProxyImage(kind: string, cluster: string, env: NodeJS.ProcessEnv): Promise<string> {
  const binary = await oauth2ProxyBinary(env);
  // .../peers/oauth2-proxy-<version>/bin/oauth2-proxy
  const version = path.basename(path.dirname(path.dirname(binary))).replace(/^oauth2-proxy-/, '');
  const digest = createHash('sha256').update(readFileSync(binary)).digest('hex').slice(0, 10);
  const image = `${OAUTH2_PROXY_REPOSITORY}:${version}-${digest}`;
  const present = await exec('docker', ['image', 'inspect', '-f', '{{.Id}}', image], env).then(
    () => true,
    () => false,
  );
  if (!present) {
    const dir = mkdtempSync(path.join(tmpdir(), 'oauth2-proxy-image-'));
    try {
      const root = path.join(dir, 'root');
      mkdirSync(path.join(root, 'bin'), { recursive: true });
      mkdirSync(path.join(root, 'etc'));
      mkdirSync(path.join(root, 'tmp'));
      chmodSync(path.join(root, 'tmp'), 0o1777);
      writeFileSync(path.join(root, 'bin', 'oauth2-proxy'), readFileSync(binary), { mode: 0o755 });
      writeFileSync(path.join(root, 'etc', 'passwd'), `root:x:0:0:root:/:/sbin/nologin\nnonroot:x:${OAUTH2_PROXY_UID}:${OAUTH2_PROXY_UID}::/:/sbin/nologin\n`);
      writeFileSync(path.join(root, 'etc', 'group'), `root:x:0:\nnonroot:x:${OAUTH2_PROXY_UID}:\n`);
      const tar = path.join(dir, 'image.tar');
      await exec('tar', ['-C', root, '--owner=0', '--group=0', '-cf', tar, '.'], env);
      await exec(
        'docker',
        ['import', '--change', 'ENTRYPOINT ["/bin/oauth2-proxy"]', '--change', `USER ${OAUTH2_PROXY_UID}:${OAUTH2_PROXY_UID}`, '--change', `LABEL org.opencontainers.image.version=${version}`, tar, image],
        env,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Earlier builds of the image are not used again.
    const old = (await exec('docker', ['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}', OAUTH2_PROXY_REPOSITORY], env)).split('\n').filter((n) => n !== '' && n !== image);
    if (old.length > 0) await exec('docker', ['rmi', ...old], env).catch(() => undefined);
  }
  await exec(kind, ['load', 'docker-image', image, '--name', cluster], env);
  return image;
}
