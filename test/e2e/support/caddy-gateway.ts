// A platform's gateway in the cluster: Caddy (built from its Go module, peer-images.ts) in front of
// a team's service, calling a RateLimitPolicy's decision Service with forward_auth, wired by hand
// as docs/concepts/gateway.md ("Caddy") shows; the Caddyfile site is the one the integration tier
// tests against a local Caddy. Also the team's side of Gateway API: the service behind, a Gateway
// and an HTTPRoute for the policy to target (no Gateway API data plane builds here, so nothing
// reads the Gateway: Caddy stands in for it).
import { caddySite } from '../../harness/gateways/gateways.ts';
import { imageOf, type E2eContext } from '../../harness/kind/context.ts';
import { PEER_UID } from '../../harness/kind/peer-images.ts';
import { bundleEntry } from '../../../scripts/bundle.ts';
import { RESTRICTED_CONTAINER, USER_SERVICE } from './workloads.ts';

export const CADDY = 'caddy';
export const CADDY_PORT = 8080;
const podSecurity = { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };

/** The team's service (the project's user service on 8081) and its Service on port 80. */
export function backend(ctx: E2eContext, name: string): object[] {
  const labels = { 'app.kubernetes.io/name': name };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            automountServiceAccountToken: false,
            securityContext: { ...podSecurity, runAsUser: 1000, runAsGroup: 1000 },
            containers: [
              {
                name: 'service',
                image: imageOf(ctx, USER_SERVICE),
                imagePullPolicy: 'IfNotPresent',
                command: ['node', bundleEntry('user-service')],
                env: [{ name: 'PORT', value: '8081' }],
                ports: [{ name: 'http', containerPort: 8081 }],
                readinessProbe: {
                  httpGet: { path: '/healthcheck/ready', port: 8081 },
                  periodSeconds: 1,
                },
                securityContext: RESTRICTED_CONTAINER,
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, labels },
      spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    },
  ];
}

/** A Gateway (of a class no controller here serves) and an HTTPRoute with one named rule to the backend. */
export function gatewayRoute(
  gateway: string,
  route: string,
  rule: string,
  backendName: string,
): object[] {
  return [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: gateway },
      spec: {
        gatewayClassName: 'caddy',
        listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }],
      },
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: route },
      spec: {
        parentRefs: [{ name: gateway }],
        rules: [
          {
            name: rule,
            matches: [{ path: { type: 'PathPrefix', value: '/' } }],
            backendRefs: [{ name: backendName, port: 80 }],
          },
        ],
      },
    },
  ];
}

/** Caddy's ConfigMap, Deployment and Service: forward_auth to `decision`, then `service` (host:port each). */
export function caddyObjects(ctx: E2eContext, decision: string, service: string): object[] {
  const labels = { 'app.kubernetes.io/name': CADDY };
  const caddyfile = `{
  admin off
  auto_https off
  persist_config off
}
${caddySite(`:${CADDY_PORT}`, decision, service, { failOpen: true })}`;
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: CADDY },
      data: { Caddyfile: caddyfile },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: CADDY, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            automountServiceAccountToken: false,
            securityContext: podSecurity,
            containers: [
              {
                name: CADDY,
                image: ctx.caddyImage,
                imagePullPolicy: 'IfNotPresent',
                args: ['run', '--config', '/etc/caddy/Caddyfile', '--adapter', 'caddyfile'],
                // Caddy keeps its data and config state under these; the root filesystem is read-only.
                env: [
                  { name: 'HOME', value: '/state' },
                  { name: 'XDG_DATA_HOME', value: '/state/data' },
                  { name: 'XDG_CONFIG_HOME', value: '/state/config' },
                ],
                ports: [{ name: 'http', containerPort: CADDY_PORT }],
                readinessProbe: { tcpSocket: { port: CADDY_PORT }, periodSeconds: 1 },
                securityContext: {
                  ...RESTRICTED_CONTAINER,
                  runAsUser: PEER_UID,
                  runAsGroup: PEER_UID,
                },
                volumeMounts: [
                  { name: 'config', mountPath: '/etc/caddy', readOnly: true },
                  { name: 'state', mountPath: '/state' },
                ],
              },
            ],
            volumes: [
              { name: 'config', configMap: { name: CADDY } },
              { name: 'state', emptyDir: {} },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: CADDY, labels },
      spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    },
  ];
}
