// The install as the README gives it (the tier's global setup ran it: CRDs server-side, then
// helm install of charts/portcullis with the built images and the bundled Redis): what a user
// sees afterwards.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { capture } from '../harness/kind/cluster.ts';
import { Kube } from '../harness/kind/kube.ts';

const ctx = inject('e2e');
const kube = new Kube(ctx);

afterAll(async () => {
  await kube.close();
});

describe('install: CRDs and the chart on a real cluster', () => {
  it('the CRDs are Established and kubectl explain documents them', async () => {
    for (const crd of ['ratelimitroutes.portcullis.dev', 'oauthclients.portcullis.dev']) {
      const obj = await kube.json<{
        status: { conditions: Array<{ type: string; status: string }> };
      }>(['get', 'crd', crd]);
      expect(obj.status.conditions).toContainEqual(
        expect.objectContaining({ type: 'Established', status: 'True' }),
      );
    }
    expect(await kube.kubectl(['explain', 'ratelimitroute.spec.limiter.burstCapacity'])).toMatch(
      /DESCRIPTION:\s+\S/,
    );
  });

  it('the helm release is deployed', async () => {
    const status = JSON.parse(
      await capture(ctx.helm, [
        'status',
        ctx.release,
        '--kubeconfig',
        ctx.kubeconfig,
        '-n',
        ctx.releaseNamespace,
        '-o',
        'json',
      ]),
    ) as { info: { status: string } };
    expect(status.info.status).toBe('deployed');
  });

  it('the operator is Ready, runs the built image as non-root, and has logged no warning or error', async () => {
    const pods = await kube.json<{
      items: Array<{
        metadata: { name: string };
        spec: { containers: Array<{ image: string }> };
        status: { containerStatuses: Array<{ ready: boolean; restartCount: number }> };
      }>;
    }>(['-n', ctx.releaseNamespace, 'get', 'pods', '-l', 'app.kubernetes.io/component=operator']);
    expect(pods.items.length).toBeGreaterThanOrEqual(1);
    for (const pod of pods.items) {
      expect(pod.spec.containers[0]?.image).toBe(`portcullis/operator:${ctx.tag}`);
      expect(pod.status.containerStatuses.every((c) => c.ready)).toBe(true);
      expect((await kube.exec(ctx.releaseNamespace, pod.metadata.name, ['id', '-u'])).trim()).toBe(
        '1000',
      );
      // pino levels: 40 warn, 50 error, 60 fatal.
      const lines = (await kube.logs(ctx.releaseNamespace, pod.metadata.name))
        .split('\n')
        .filter((l) => l.startsWith('{'));
      expect(lines.length).toBeGreaterThan(0);
      const bad = lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 40);
      expect(bad, bad.join('\n')).toEqual([]);
    }
  });

  it("the two bundled Redis are Ready and answer; the auth servers' one never evicts", async () => {
    for (const [component, policy] of [
      ['redis', 'volatile-ttl'],
      ['auth-redis', 'noeviction'],
    ] as const) {
      await kube.wait(
        ctx.releaseNamespace,
        ['pod', '-l', `app.kubernetes.io/component=${component}`],
        'condition=Ready',
        120,
      );
      const pod = (
        await kube.kubectl([
          '-n',
          ctx.releaseNamespace,
          'get',
          'pods',
          '-l',
          `app.kubernetes.io/component=${component}`,
          '-o',
          'jsonpath={.items[0].metadata.name}',
        ])
      ).trim();
      // It requires the chart's generated password: the container's REDIS_PASSWORD, handed to
      // redis-cli through its environment (REDISCLI_AUTH), never on a command line.
      const cli = (...args: string[]) =>
        kube.exec(ctx.releaseNamespace, pod, [
          'sh',
          '-c',
          'REDISCLI_AUTH="$REDIS_PASSWORD" exec redis-cli "$@"',
          'redis-cli',
          ...args,
        ]);
      expect((await cli('ping')).trim()).toBe('PONG');
      const config = (await cli('config', 'get', 'maxmemory*')).split('\n').map((l) => l.trim());
      expect(config[config.indexOf('maxmemory-policy') + 1], component).toBe(policy);
      // Three quarters of the chart's 128Mi limit.
      expect(config[config.indexOf('maxmemory') + 1], component).toBe(String(96 * 1024 * 1024));
      // Admitted only from its clients where the CNI enforces it (this cluster's ptp CNI does not).
      const admitted = await kube.kubectl([
        '-n',
        ctx.releaseNamespace,
        'get',
        'networkpolicy',
        `${ctx.release}-${component}`,
        '-o',
        'jsonpath={.spec.ingress[0].from[0].podSelector.matchLabels}',
      ]);
      // redis: every pod running a sidecar (route pods and team pods with an injected one); auth-redis: the auth servers.
      expect(JSON.parse(admitted) as Record<string, string>).toEqual(
        component === 'redis'
          ? { 'portcullis.dev/sidecar': 'true' }
          : {
              'app.kubernetes.io/name': 'portcullis-auth-server',
              'app.kubernetes.io/managed-by': 'portcullis-operator',
            },
      );
    }
  });
});
