// Password hashes: scrypt in a PHC string `$scrypt$ln=17,r=8,p=1$<salt>$<hash>` (base64, no
// padding required). Defaults follow the OWASP password storage guidance (N=2^17, r=8, p=1).
// Verification reads the parameters from the stored string, so stronger settings need no change.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

export interface ScryptParams {
  /** log2 of the CPU/memory cost N. */
  readonly ln: number;
  readonly r: number;
  readonly p: number;
}

export const defaultScryptParams: ScryptParams = { ln: 17, r: 8, p: 1 };
const keyLength = 32;

function derive(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const N = 2 ** params.ln;
  // Memory is 128 * N * r bytes; allow twice that so Node never refuses a valid parameter set.
  const maxmem = 256 * N * params.r + 1024 * 1024;
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize('NFC'),
      salt,
      keyLength,
      { N, r: params.r, p: params.p, maxmem },
      (err, key) => (err ? reject(err) : resolve(key)),
    );
  });
}

export async function hashPassword(
  password: string,
  params: ScryptParams = defaultScryptParams,
): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, params);
  return `$scrypt$ln=${params.ln},r=${params.r},p=${params.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

const phc =
  /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

/** Parses a stored hash; undefined when it is not one of ours or the parameters are out of range. */
export function parsePasswordHash(
  stored: string,
): { params: ScryptParams; salt: Buffer; key: Buffer } | undefined {
  const m = phc.exec(stored);
  if (!m) return undefined;
  const params = { ln: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  if (
    params.ln < 10 ||
    params.ln > 20 ||
    params.r < 1 ||
    params.r > 32 ||
    params.p < 1 ||
    params.p > 16
  )
    return undefined;
  return {
    params,
    salt: Buffer.from(m[4] ?? '', 'base64'),
    key: Buffer.from(m[5] ?? '', 'base64'),
  };
}

/** Constant-time verification; false (never a throw) on a malformed hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parsePasswordHash(stored);
  if (!parsed || parsed.key.length === 0) return false;
  const key = await derive(password, parsed.salt, parsed.params);
  return key.length === parsed.key.length && timingSafeEqual(key, parsed.key);
}
