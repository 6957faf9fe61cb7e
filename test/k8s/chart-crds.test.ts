// The CRDs' upgrade paths on a real API server. helm installs charts/portcullis/crds/ once and
// never upgrades it; so either the CRDs are applied server-side before each helm upgrade (make
// deploy), or crds.enabled renders the very same CRDs as templates that helm upgrades, kept on
// uninstall (crds.keep).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';

let cluster: Cluster;
const NS = 'portcullis-system';
const KEEP = { 'helm.sh/resource-policy': 'keep' };

type Crd = {
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec: { versions: { additionalPrinterColumns: { name: string }[] }[] };
};
const committed: Crd[] = readdirSync('crds')
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => parse(readFileSync(`crds/${f}`, 'utf8')) as Crd);

beforeAll(async () => {
  cluster = await startCluster();
  await cluster.kubectl(['create', 'namespace', NS]);
});
afterAll(async () => {
  await cluster?.stop();
});

const template = (args: string[]) =>
  cluster.helm([
    'template',
    'portcullis',
    'charts/portcullis',
    '--namespace',
    NS,
    '--kube-version',
    cluster.tools.kubernetesVersion,
    ...args,
  ]);
const crdsIn = (rendered: string) =>
  parseAllDocuments(rendered)
    .map((d) => d.toJS() as Crd | null)
    .filter((d): d is Crd => d?.kind === 'CustomResourceDefinition');
const byName = (crds: Crd[]) =>
  [...crds].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
const withKeep = (crd: Crd): Crd => ({ ...crd, metadata: { ...crd.metadata, annotations: KEEP } });
const columns = async (crd: string) =>
  (
    await cluster.kubectl([
      'get',
      'crd',
      crd,
      '-o',
      'jsonpath={.spec.versions[0].additionalPrinterColumns[*].name}',
    ])
  ).stdout.split(' ');

describe('the CRDs as chart templates (crds.enabled)', () => {
  it('are not rendered by default: helm keeps installing crds/ only', async () => {
    const res = await template([]);
    expect(res.code, res.stderr).toBe(0);
    expect(crdsIn(res.stdout)).toEqual([]);
  });

  it('render exactly the three CRDs of crds/, with the keep annotation unless crds.keep is false', async () => {
    expect(committed.map((c) => c.metadata.name).sort()).toEqual([
      'oauthclients.portcullis.dev',
      'ratelimitpolicies.portcullis.dev',
      'ratelimitroutes.portcullis.dev',
    ]);
    const kept = await template(['--set', 'crds.enabled=true']);
    expect(kept.code, kept.stderr).toBe(0);
    expect(byName(crdsIn(kept.stdout))).toEqual(byName(committed.map(withKeep)));
    const notKept = await template(['--set', 'crds.enabled=true', '--set', 'crds.keep=false']);
    expect(byName(crdsIn(notKept.stdout))).toEqual(byName(committed));
  });
});

describe('upgrading the CRDs', () => {
  it('server-side apply of crds/ twice: a changed field reaches the API server, custom resources stay', async () => {
    const first = await cluster.kubectl(['apply', '--server-side', '-f', 'crds/']);
    expect(first.code, first.stderr).toBe(0);
    await cluster.kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/ratelimitroutes.portcullis.dev',
    ]);
    const route = {
      apiVersion: 'portcullis.dev/v1alpha1',
      kind: 'RateLimitRoute',
      metadata: { name: 'r', namespace: 'default' },
      spec: {
        target: { image: 'example/user-service:1.0' },
        limiter: { replenishRate: 1, burstCapacity: 10 },
      },
    };
    const created = await cluster.kubectl(['apply', '-f', '-'], { input: stringify(route) });
    expect(created.code, created.stderr).toBe(0);

    // A next release of the CRD: one more printer column.
    const rlr = committed.find((c) => c.metadata.name === 'ratelimitroutes.portcullis.dev')!;
    const next = structuredClone(rlr);
    next.spec.versions[0]!.additionalPrinterColumns.push({
      name: 'Upstream',
      type: 'string',
      jsonPath: '.spec.upstream.service.name',
    } as { name: string });
    const upgraded = await cluster.kubectl(['apply', '--server-side', '-f', '-'], {
      input: stringify(next),
    });
    expect(upgraded.code, upgraded.stderr).toBe(0);
    expect(await columns(rlr.metadata.name)).toContain('Upstream');
    // And back: the field the manager no longer applies is removed again.
    const again = await cluster.kubectl(['apply', '--server-side', '-f', 'crds/']);
    expect(again.code, again.stderr).toBe(0);
    expect(await columns(rlr.metadata.name)).not.toContain('Upstream');
    const still = await cluster.kubectl(['get', 'rlr', 'r', '-n', 'default', '-o', 'name']);
    expect(still.stdout.trim()).toBe('ratelimitroute.portcullis.dev/r');
  });

  it('helm takes over CRDs applied before (crds.enabled, --skip-crds --take-ownership), upgrades them, and leaves them on uninstall', async () => {
    const install = await cluster.helm([
      'install',
      'portcullis',
      'charts/portcullis',
      '--namespace',
      NS,
      '--set',
      'crds.enabled=true',
      '--set',
      'redis.enabled=false',
      '--skip-crds',
      '--take-ownership',
    ]);
    expect(install.code, install.stderr).toBe(0);
    const meta = JSON.parse(
      (await cluster.kubectl(['get', 'crd', 'ratelimitroutes.portcullis.dev', '-o', 'json']))
        .stdout,
    ) as Crd;
    expect(meta.metadata.annotations).toMatchObject({
      ...KEEP,
      'meta.helm.sh/release-name': 'portcullis',
      'meta.helm.sh/release-namespace': NS,
    });
    // An upgrade applies the templated CRDs: a column another manager added and helm does not render is gone.
    const drift = await cluster.kubectl([
      'patch',
      'crd',
      'ratelimitroutes.portcullis.dev',
      '--type=json',
      '-p',
      JSON.stringify([
        {
          op: 'add',
          path: '/spec/versions/0/additionalPrinterColumns/-',
          value: { name: 'Extra', type: 'string', jsonPath: '.spec.path' },
        },
      ]),
    ]);
    expect(drift.code, drift.stderr).toBe(0);
    expect(await columns('ratelimitroutes.portcullis.dev')).toContain('Extra');
    const upgrade = await cluster.helm([
      'upgrade',
      'portcullis',
      'charts/portcullis',
      '--namespace',
      NS,
      '--set',
      'crds.enabled=true',
      '--set',
      'redis.enabled=false',
      '--force-conflicts',
    ]);
    expect(upgrade.code, upgrade.stderr).toBe(0);
    expect(await columns('ratelimitroutes.portcullis.dev')).toEqual(
      committed
        .find((c) => c.metadata.name === 'ratelimitroutes.portcullis.dev')!
        .spec.versions[0]!.additionalPrinterColumns.map((c) => c.name),
    );
    const uninstall = await cluster.helm(['uninstall', 'portcullis', '--namespace', NS]);
    expect(uninstall.code, uninstall.stderr).toBe(0);
    const left = await cluster.kubectl([
      'get',
      'crd',
      'ratelimitroutes.portcullis.dev',
      'oauthclients.portcullis.dev',
      '-o',
      'name',
    ]);
    expect(left.code, left.stderr).toBe(0);
    expect(left.stdout.trim().split('\n')).toHaveLength(2);
    expect((await cluster.kubectl(['get', 'rlr', 'r', '-n', 'default', '-o', 'name'])).code).toBe(
      0,
    );
  });

  it('make deploy: CRDs server-side, then helm upgrade --install; twice', async () => {
    const helmHome = mkdtempSync(path.join(tmpdir(), 'portcullis-helm-'));
    const env = {
      ...process.env,
      KUBECONFIG: cluster.kubeconfigPath,
      HELM_CACHE_HOME: helmHome,
      HELM_CONFIG_HOME: helmHome,
      HELM_DATA_HOME: helmHome,
    };
    const make = () =>
      new Promise<{ code: number; output: string }>((resolve) => {
        execFile(
          'make',
          [
            'deploy',
            `KUBECTL=${cluster.tools.kubectl}`,
            `HELM=${cluster.tools.helm}`,
            'RELEASE=deployed',
            'NAMESPACE=deployed-ns',
            'HELM_FLAGS=--set redis.enabled=false',
          ],
          { env },
          (err, stdout, stderr) =>
            resolve({
              code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1,
              output: stdout + stderr,
            }),
        );
      });
    try {
      // The CRDs were last written by helm (the test above); the apply forces through any field helm owns.
      const first = await make();
      expect(first.code, first.output).toBe(0);
      expect(first.output).toContain(
        'customresourcedefinition.apiextensions.k8s.io/ratelimitroutes.portcullis.dev serverside-applied',
      );
      const again = await make();
      expect(again.code, again.output).toBe(0);
      const status = await cluster.helm([
        'status',
        'deployed',
        '--namespace',
        'deployed-ns',
        '-o',
        'json',
      ]);
      expect(
        (JSON.parse(status.stdout) as { version: number; info: { status: string } }).version,
      ).toBe(2);
      const managers = JSON.parse(
        (
          await cluster.kubectl([
            'get',
            'crd',
            'ratelimitroutes.portcullis.dev',
            '-o',
            'json',
            '--show-managed-fields',
          ])
        ).stdout,
      ) as { metadata: { managedFields: { manager: string; operation: string }[] } };
      expect(
        managers.metadata.managedFields
          .filter((m) => m.operation === 'Apply')
          .map((m) => m.manager),
      ).toContain('kubectl');
    } finally {
      rmSync(helmHome, { recursive: true, force: true });
    }
  });
});
