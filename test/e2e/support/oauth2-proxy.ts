// oauth2-proxy in the cluster, as a platform would run it in front of an app: a Deployment of the
// peer image (peer-images.ts), its Service, and its configuration in a ConfigMap, the OAuthClient's
// generated id and secret read from the Secret the operator writes. The Portcullis auth server
// of the namespace is its OpenID Connect provider (discovery, code flow with PKCE, id_token).
//
// The access token reaches the upstream as `Authorization: Bearer`: oauth2-proxy's
// --pass-authorization-header sends the id_token there and --pass-access-token sends the access
// token in X-Forwarded-Access-Token, so neither flag feeds a route keyed on a verified access
// token (typ at+jwt, the resource server's audience). Its alpha configuration's
// injectRequestHeaders does: the access_token claim with the prefix "Bearer ".
//
// The issuer the chart was installed with is a loopback address (http://127.0.0.1:PORT, a
// port-forward on the test's host). Inside the pod the same address is a relay to the auth
// server's Service (a native sidecar started before oauth2-proxy), so the browser and oauth2-proxy
// see one issuer URL, as they would see one public host name in a real install.
import { stringify } from 'yaml';
import { imageOf, type E2eContext } from '../../harness/kind/context.ts';
import { PEER_UID } from '../../harness/kind/peer-images.ts';
import { RESTRICTED_CONTAINER, USER_SERVICE } from './workloads.ts';

export const OAUTH2_PROXY = 'oauth2-proxy';
export const OAUTH2_PROXY_PORT = 4180;
const CLIENT_SECRET_DIR = '/var/run/oauth-client';

export interface InClusterOAuth2ProxyOptions {
  /** The OAuthClient whose Secret (`<name>-oauth-client`) holds client_id and client_secret. */
  readonly oauthClient: string;
  /** http://127.0.0.1:PORT: the chart's issuer. */
  readonly issuer: string;
  /** The auth server's Service inside the cluster, e.g. portcullis-auth-server.<ns>.svc.cluster.local. */
  readonly authServerHost: string;
  /** Where oauth2-proxy sends signed-in requests, e.g. the route's Service. */
  readonly upstream: string;
  /** The browser-facing address: http://127.0.0.1:PORT (a port-forward to the Service). */
  readonly publicUrl: string;
  /** 32 characters: the AES key of the session cookie. */
  readonly cookieSecret: string;
}

/** oauth2-proxy's alpha configuration: provider, upstream and the headers it adds. */
export function alphaConfig(o: Pick<InClusterOAuth2ProxyOptions, 'issuer' | 'upstream'>): object {
  return {
    server: { bindAddress: `0.0.0.0:${OAUTH2_PROXY_PORT}` },
    upstreamConfig: { upstreams: [{ id: 'app', path: '/', uri: o.upstream }] },
    injectRequestHeaders: [
      {
        name: 'Authorization',
        values: [{ claimSource: { claim: 'access_token', prefix: 'Bearer ' } }],
      },
      { name: 'X-Forwarded-User', values: [{ claimSource: { claim: 'user' } }] },
      { name: 'X-Forwarded-Email', values: [{ claimSource: { claim: 'email' } }] },
    ],
    providers: [
      {
        id: 'portcullis',
        provider: 'oidc',
        // Substituted from the environment by oauth2-proxy when it reads the file.
        clientID: '${OAUTH2_PROXY_CLIENT_ID}',
        clientSecretFile: `${CLIENT_SECRET_DIR}/client_secret`,
        scope: 'openid profile email',
        code_challenge_method: 'S256',
        oidcConfig: {
          issuerURL: o.issuer,
          emailClaim: 'email',
          userIDClaim: 'email',
          audienceClaims: ['aud'],
          insecureSkipNonce: false,
        },
      },
    ],
  };
}

/** node -e script: a TCP relay from every address of the pod on PORT to HOST:TARGET_PORT. */
const RELAY = `
const net = require('node:net');
const [port, host, targetPort] = process.argv.slice(1).map((a, i) => (i === 1 ? a : Number(a)));
net.createServer((client) => {
  const upstream = net.connect(targetPort, host);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.pipe(upstream).pipe(client);
}).listen(port);`;

/** The ConfigMap, Deployment and Service of oauth2-proxy (apply into the route's namespace). */
export function oauth2ProxyObjects(ctx: E2eContext, o: InClusterOAuth2ProxyOptions): object[] {
  const labels = { 'app.kubernetes.io/name': OAUTH2_PROXY };
  const issuerPort = Number(new URL(o.issuer).port);
  const secret = `${o.oauthClient}-oauth-client`;
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: OAUTH2_PROXY },
      data: { 'alpha.yaml': stringify(alphaConfig(o)) },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: OAUTH2_PROXY, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            automountServiceAccountToken: false,
            securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
            initContainers: [
              {
                // restartPolicy Always: a native sidecar, up (its startup probe) before oauth2-proxy starts and discovers the issuer.
                name: 'issuer-relay',
                image: imageOf(ctx, USER_SERVICE),
                imagePullPolicy: 'IfNotPresent',
                restartPolicy: 'Always',
                command: ['node', '-e', RELAY, String(issuerPort), o.authServerHost, '80'],
                securityContext: { ...RESTRICTED_CONTAINER, runAsUser: 1000, runAsGroup: 1000 },
                startupProbe: {
                  tcpSocket: { port: issuerPort },
                  periodSeconds: 1,
                  failureThreshold: 60,
                },
              },
            ],
            containers: [
              {
                name: OAUTH2_PROXY,
                image: ctx.oauth2ProxyImage,
                imagePullPolicy: 'IfNotPresent',
                args: [
                  '--alpha-config=/etc/oauth2-proxy/alpha.yaml',
                  `--redirect-url=${o.publicUrl}/oauth2/callback`,
                  '--email-domain=*',
                  '--skip-provider-button=true',
                  '--cookie-name=_e2e_proxy',
                  '--cookie-secure=false',
                  `--cookie-secret=${o.cookieSecret}`,
                  // Its request log would show a prefix of each authorization code.
                  '--request-logging=false',
                ],
                env: [
                  {
                    name: 'OAUTH2_PROXY_CLIENT_ID',
                    valueFrom: { secretKeyRef: { name: secret, key: 'client_id' } },
                  },
                ],
                ports: [{ name: 'http', containerPort: OAUTH2_PROXY_PORT }],
                readinessProbe: {
                  httpGet: { path: '/ready', port: OAUTH2_PROXY_PORT },
                  periodSeconds: 2,
                },
                securityContext: {
                  ...RESTRICTED_CONTAINER,
                  runAsUser: PEER_UID,
                  runAsGroup: PEER_UID,
                },
                volumeMounts: [
                  { name: 'config', mountPath: '/etc/oauth2-proxy', readOnly: true },
                  { name: 'client', mountPath: CLIENT_SECRET_DIR, readOnly: true },
                ],
              },
            ],
            volumes: [
              { name: 'config', configMap: { name: OAUTH2_PROXY } },
              {
                name: 'client',
                secret: {
                  secretName: secret,
                  items: [{ key: 'client_secret', path: 'client_secret' }],
                },
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: OAUTH2_PROXY, labels },
      spec: {
        selector: labels,
        ports: [{ name: 'http', port: OAUTH2_PROXY_PORT, targetPort: 'http' }],
      },
    },
  ];
}
