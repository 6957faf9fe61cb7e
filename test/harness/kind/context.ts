// What the e2e tier's global setup hands every test file (vitest provide/inject): where the
// cluster and the tools are, and what was installed. Plain data only (it crosses processes).

export interface E2eImage {
  /** portcullis/<program>:<tag> */
  readonly name: string;
  /** The program's folder, e.g. services/user-service. */
  readonly program: string;
  /** Bytes, as the engine reports the image's size. */
  readonly sizeBytes: number;
  /** Seconds the build took in this run. */
  readonly buildSeconds: number;
}

export interface E2eContext {
  /** private: an engine this run started, offline images; host: the machine's own Docker engine. */
  readonly engine: 'private' | 'host';
  /** offline: node image and base images made here; public: the published ones. */
  readonly images: 'offline' | 'public';
  readonly dockerHost: string | undefined;
  readonly cluster: string;
  /** The kind node's container name (and the node's name in the cluster). */
  readonly node: string;
  readonly kubeconfig: string;
  readonly kubectl: string;
  readonly helm: string;
  readonly kind: string;
  readonly kubernetesVersion: string;
  /** What enforces NetworkPolicies: kube-router's firewall on the offline node, kindnetd on stock kind. */
  readonly networkPolicyEnforcer: 'kube-router' | 'kindnetd';
  /** Namespace of the helm release (operator, bundled Redis). */
  readonly releaseNamespace: string;
  readonly release: string;
  readonly tag: string;
  readonly builtImages: readonly E2eImage[];
  /** oauth2-proxy (a peer, built from its Go module), loaded into the node: peer-images.ts. */
  readonly oauth2ProxyImage: string;
  /** Caddy (a gateway, built from its Go module), loaded into the node: peer-images.ts. */
  readonly caddyImage: string;
  /** The issuer the chart was installed with: http://127.0.0.1:PORT, served by a port-forward the OAuth test opens. */
  readonly issuerPort: number;
  /** Seconds each provisioning step took (cold: builds; warm: cache hits). */
  readonly timings: Readonly<Record<string, number>>;
}

declare module 'vitest' {
  export interface ProvidedContext {
    e2e: E2eContext;
  }
}

/** The image of one program, e.g. imageOf(ctx, 'services/user-service'). */
export function imageOf(ctx: E2eContext, program: string): string {
  const image = ctx.builtImages.find((i) => i.program === program);
  if (image === undefined) throw new Error(`no image was built for ${program}`);
  return image.name;
}
