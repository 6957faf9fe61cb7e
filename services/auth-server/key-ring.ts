// The signing keys: the first key of the (re-read on change) keys file signs; all public halves
// are published. Imported CryptoKeys are cached per file version.
// The same file also yields the symmetric keys that seal anonymous interactions: HKDF over each
// private key with its own label, so every replica (same keys Secret) can open what another
// sealed, no second secret needs distributing, and a sealing key is useless for signing.
import { hkdfSync } from 'node:crypto';
import {
  createLocalJWKSet,
  importJWK,
  type CryptoKey,
  type JSONWebKeySet,
  type JWK,
  type JWTVerifyGetKey,
  type KeyObject,
} from 'jose';
import type { SigningJwk, SigningKeysFile } from '../../lib/config/signing-keys-file.ts';

export interface Signer {
  readonly kid: string;
  readonly alg: 'ES256' | 'RS256';
  readonly key: CryptoKey | KeyObject;
}

export interface KeyRing {
  signer(): Promise<Signer>;
  /** The public JWKS (RFC 7517) served at jwks_uri. */
  publicJwks(): JSONWebKeySet;
  /** The distinct algorithms of the published keys, the signing key's first (for the metadata). */
  algorithms(): readonly Signer['alg'][];
  /** Key resolver for jwtVerify over the published keys. */
  verifierKeys(): JWTVerifyGetKey;
  /** 256-bit sealing keys by kid, the current one first. */
  sealingKeys(): readonly SealingKey[];
}

export interface SealingKey {
  readonly kid: string;
  readonly key: Uint8Array;
}

function sealingKey(jwk: SigningJwk): SealingKey {
  const secret = Buffer.from(jwk.d, 'base64url');
  return {
    kid: jwk.kid,
    key: new Uint8Array(hkdfSync('sha256', secret, jwk.kid, 'portcullis interaction sealing', 32)),
  };
}

function publicHalf(jwk: SigningJwk): JWK {
  return jwk.kty === 'EC'
    ? { kty: 'EC', crv: jwk.crv, x: jwk.x, y: jwk.y, kid: jwk.kid, alg: jwk.alg, use: 'sig' }
    : { kty: 'RSA', n: jwk.n, e: jwk.e, kid: jwk.kid, alg: jwk.alg, use: 'sig' };
}

export function createKeyRing(file: () => SigningKeysFile): KeyRing {
  let cachedFor: SigningKeysFile | undefined;
  let signer: Promise<Signer> | undefined;
  let jwks: JSONWebKeySet = { keys: [] };
  let verifier: JWTVerifyGetKey | undefined;
  let sealing: readonly SealingKey[] = [];

  const refresh = () => {
    const current = file();
    if (current === cachedFor && signer && verifier) return { signer, verifier };
    cachedFor = current;
    const first = current.keys[0];
    if (!first) throw new Error('the signing keys file has no key');
    signer = importJWK(first, first.alg).then((key) => {
      if (key instanceof Uint8Array) throw new Error('signing key imported as a symmetric secret');
      return { kid: first.kid, alg: first.alg, key };
    });
    jwks = { keys: current.keys.map(publicHalf) };
    verifier = createLocalJWKSet(jwks);
    sealing = current.keys.map(sealingKey);
    return { signer, verifier };
  };

  return {
    signer: () => refresh().signer,
    publicJwks() {
      refresh();
      return jwks;
    },
    algorithms: () => [...new Set(file().keys.map((k) => k.alg))],
    verifierKeys: () => refresh().verifier,
    sealingKeys() {
      refresh();
      return sealing;
    },
  };
}
