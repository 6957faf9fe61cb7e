// Test tiers (docs/how-to/testing.md). Each tier is a vitest project so that the Makefile can run
// them one after another and report each one loudly.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    reporters: ['default'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          setupFiles: ['test/harness/reliability-setup.ts'],
          testTimeout: 10_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          setupFiles: ['test/harness/reliability-setup.ts'],
          // Bundles the programs as deployed (dist/<program>/main.mjs) for the tests that run them so,
          // and builds the gateway peers of the decision-service tests (Caddy, the gRPC ext_authz client).
          globalSetup: [
            'test/harness/build-programs-setup.ts',
            'test/harness/gateways/global-setup.ts',
          ],
          testTimeout: 120_000,
          hookTimeout: 60_000,
          // Timing-sensitive tests (token refill, Redis kill) share a 2-core machine: one file at a time.
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          setupFiles: ['test/harness/reliability-setup.ts'],
          // The auth server runs as deployed (its bundle) behind the pages; oauth2-proxy is built
          // (once, cached) from its Go module.
          globalSetup: [
            'test/harness/build-programs-setup.ts',
            'test/harness/peers/global-setup.ts',
          ],
          testTimeout: 120_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'k8s',
          include: ['test/k8s/**/*.test.ts'],
          setupFiles: ['test/harness/reliability-setup.ts'],
          // Builds (once, cached) or finds kube-apiserver, etcd, kubectl and helm.
          globalSetup: ['test/harness/k8s/global-setup.ts', 'test/harness/build-programs-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          // Provisions the real cluster once for every file (test/harness/kind/cluster.ts): images
          // from the Dockerfiles, a kind cluster, the CRDs and the chart; removes it at the end.
          globalSetup: ['test/harness/kind/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 600_000,
          // One cluster on a 2-core machine: files share it, run one at a time, and each works in
          // namespaces of its own, so their order does not matter.
          fileParallelism: false,
        },
      },
    ],
  },
});
