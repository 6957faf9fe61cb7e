// An https front for a plain-http program, as an Ingress terminating TLS is in a real install:
// a node:https reverse proxy on a free loopback port with a serving certificate (127.0.0.1,
// localhost) signed by a CA made for it, so a peer that insists on https (the kube-apiserver's
// JWT issuer) can be given that CA and nothing else.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

export interface TlsFront {
  /** https://127.0.0.1:port */
  readonly url: string;
  /** The CA that signed the front's certificate (PEM). */
  readonly caPem: string;
  /** Points the front at its backend (it answers 502 until then). */
  setTarget(target: string): void;
  stop(): Promise<void>;
}

/** A throwaway CA and a serving certificate for 127.0.0.1 and localhost (EC P-256, as the k8s harness makes them). */
async function makeServingCertificate(
  dir: string,
): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  const openssl = (args: string[]) => exec('openssl', args, { cwd: dir });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl([
    'req',
    '-x509',
    '-new',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '30',
    '-subj',
    '/CN=portcullis-test-front-ca',
  ]);
  writeFileSync(
    path.join(dir, 'front.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  await openssl([
    'req',
    '-new',
    ...ec,
    '-keyout',
    'front.key',
    '-out',
    'front.csr',
    '-subj',
    '/CN=portcullis-test-front',
  ]);
  await openssl([
    'x509',
    '-req',
    '-in',
    'front.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'front.crt',
    '-days',
    '30',
    '-extfile',
    'front.ext',
  ]);
  const read = (name: string) => readFileSync(path.join(dir, name), 'utf8');
  return { caPem: read('ca.crt'), certPem: read('front.crt'), keyPem: read('front.key') };
}

/**
 * Starts the front on a free port (listening before its backend exists, so the backend can be
 * told its public https URL). Requests are passed on unchanged with X-Forwarded-Proto/-For added.
 */
export async function startTlsFront(): Promise<TlsFront> {
  const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-front-'));
  const { caPem, certPem, keyPem } = await makeServingCertificate(dir);
  let target: URL | undefined;
  const server = https.createServer({ cert: certPem, key: keyPem }, (req, res) => {
    if (target === undefined) {
      res.writeHead(502).end('no backend yet');
      return;
    }
    const upstream = http.request(
      new URL(req.url ?? '/', target),
      {
        method: req.method,
        headers: {
          ...req.headers,
          'x-forwarded-proto': 'https',
          'x-forwarded-for': req.socket.remoteAddress ?? '',
        },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the TLS front has no port');
  return {
    url: `https://127.0.0.1:${address.port}`,
    caPem,
    setTarget(t) {
      target = new URL(t);
    },
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
