// Images of the peers the e2e tests run beside the project's own programs, each built from its Go
// module and cached by version outside the repository: oauth2-proxy
// (test/harness/peers/build-oauth2-proxy.sh, shared with the browser tier) and Caddy
// (test/harness/gateways/build-caddy.sh, shared with the integration tier). Their binaries are
// static (CGO off), so an image is that one file with a passwd entry and a /tmp, made by
// `docker import` from a folder: no base image, no registry, the same with the private engine
// offline and with a Docker engine of one's own. Tagged by the binary's content, so a cached image
// is never stale; `kind load` skips an image the node already has.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../programs.ts';
import { printedValue } from '../printed-path.ts';

/** The non-root user the peer images run as (distroless's "nonroot"). */
export const PEER_UID = 65532;

interface Peer {
  /** The image repository, e.g. portcullis-e2e/caddy. */
  readonly repository: string;
  /** The script that builds the binary into its cache, relative to the repository root. */
  readonly script: string;
  /** The variable its --print-env names the binary with. */
  readonly envVar: string;
  /** The binary's name, in /bin of the image; its cache folder is <name>-<version>. */
  readonly binary: string;
}

export const OAUTH2_PROXY_PEER: Peer = {
  repository: 'portcullis-e2e/oauth2-proxy',
  script: 'test/harness/peers/build-oauth2-proxy.sh',
  envVar: 'OAUTH2_PROXY',
  binary: 'oauth2-proxy',
};
export const CADDY_PEER: Peer = {
  repository: 'portcullis-e2e/caddy',
  script: 'test/harness/gateways/build-caddy.sh',
  envVar: 'CADDY',
  binary: 'caddy',
};

function exec(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { env, cwd: repoRoot, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout, stderr) =>
        err
          ? reject(
              new Error(
                `${path.basename(command)} ${args.join(' ')} failed: ${err.message}\n${stderr.slice(-2000)}`,
              ),
            )
          : resolve(stdout),
    );
  });
}

/** The peer's binary, built first when the cache lacks it (minutes, once). */
async function peerBinary(peer: Peer, env: NodeJS.ProcessEnv): Promise<string> {
  const out = await exec(path.join(repoRoot, peer.script), ['--print-env'], env);
  return printedValue(out, peer.envVar, peer.script);
}

/**
 * Builds (when missing) the peer's image in the engine at DOCKER_HOST and loads it into the kind
 * cluster's node. Returns the image name, e.g. portcullis-e2e/oauth2-proxy:v7.15.6-1a2b3c4d5e.
 */
export async function loadPeerImage(
  peer: Peer,
  kind: string,
  cluster: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const binary = await peerBinary(peer, env);
  // .../<binary>-<version>/bin/<binary>
  const version = path.basename(path.dirname(path.dirname(binary))).slice(peer.binary.length + 1);
  const digest = createHash('sha256').update(readFileSync(binary)).digest('hex').slice(0, 10);
  const image = `${peer.repository}:${version}-${digest}`;
  const present = await exec('docker', ['image', 'inspect', '-f', '{{.Id}}', image], env).then(
    () => true,
    () => false,
  );
  if (!present) {
    const dir = mkdtempSync(path.join(tmpdir(), `${peer.binary}-image-`));
    try {
      const root = path.join(dir, 'root');
      mkdirSync(path.join(root, 'bin'), { recursive: true });
      mkdirSync(path.join(root, 'etc'));
      mkdirSync(path.join(root, 'tmp'));
      chmodSync(path.join(root, 'tmp'), 0o1777);
      writeFileSync(path.join(root, 'bin', peer.binary), readFileSync(binary), { mode: 0o755 });
      writeFileSync(
        path.join(root, 'etc', 'passwd'),
        `root:x:0:0:root:/:/sbin/nologin\nnonroot:x:${PEER_UID}:${PEER_UID}::/:/sbin/nologin\n`,
      );
      writeFileSync(path.join(root, 'etc', 'group'), `root:x:0:\nnonroot:x:${PEER_UID}:\n`);
      const tar = path.join(dir, 'image.tar');
      await exec('tar', ['-C', root, '--owner=0', '--group=0', '-cf', tar, '.'], env);
      await exec(
        'docker',
        [
          'import',
          '--change',
          `ENTRYPOINT ["/bin/${peer.binary}"]`,
          '--change',
          `USER ${PEER_UID}:${PEER_UID}`,
          '--change',
          `LABEL org.opencontainers.image.version=${version}`,
          tar,
          image,
        ],
        env,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Earlier builds of the image are not used again.
    const old = (
      await exec(
        'docker',
        ['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}', peer.repository],
        env,
      )
    )
      .split('\n')
      .filter((n) => n !== '' && n !== image);
    if (old.length > 0) await exec('docker', ['rmi', ...old], env).catch(() => undefined);
  }
  await exec(kind, ['load', 'docker-image', image, '--name', cluster], env);
  return image;
}
