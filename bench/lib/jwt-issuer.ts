// The token material of the jwt-mode gateway benchmark: an ES256 key pair made at start, its JWKS
// served from a small local HTTP server (the issuer's origin), and one access token per user
// (typ at+jwt, iss, aud, sub = the user, exp an hour ahead, kid in the header), as an OAuth
// authorization server would hand them out.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export interface JwtIssuer {
  /** The issuer (iss), also the origin the JWKS is served from. */
  readonly issuer: string;
  readonly audience: string;
  readonly jwksUrl: string;
  /** The access token of each user, in the order of the users given. */
  readonly tokens: readonly string[];
  /** GET requests the JWKS endpoint answered so far (each gateway should fetch once and cache). */
  readonly jwksFetches: () => number;
  readonly stop: () => Promise<void>;
}

const KID = 'bench-es256';
const TOKEN_TTL_S = 3600;

export async function startJwtIssuer(
  users: readonly string[],
  audience: string,
  nowMs: number,
): Promise<JwtIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwks = JSON.stringify({
    keys: [{ ...(await exportJWK(publicKey)), kid: KID, alg: 'ES256', use: 'sig' }],
  });
  let fetches = 0;
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/jwks.json') {
      fetches++;
      res
        .writeHead(200, {
          'content-type': 'application/jwk-set+json',
          'cache-control': 'max-age=300',
        })
        .end(jwks);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const iat = Math.floor(nowMs / 1000);
  const tokens = await Promise.all(
    users.map((sub) =>
      new SignJWT({ client_id: 'bench-client', scope: 'profile' })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: KID })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject(sub)
        .setIssuedAt(iat)
        .setExpirationTime(iat + TOKEN_TTL_S)
        .setJti(`${sub}-${iat}`)
        .sign(privateKey),
    ),
  );
  return {
    issuer,
    audience,
    jwksUrl: `${issuer}/jwks.json`,
    tokens,
    jwksFetches: () => fetches,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
