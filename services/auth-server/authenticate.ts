// Password sign-in behind the throttle. An unknown username costs the same scrypt work as a known
// one (a dummy hash with the parameters the users file uses), so timing does not reveal which
// usernames exist.
import type { FastifyRequest } from 'fastify';
import type { AuthContext } from './context.ts';
import { defaultScryptParams, hashPassword, parsePasswordHash, verifyPassword, type ScryptParams } from './passwords.ts';
import { randomToken } from './random.ts';

export type SignInResult =
  | { readonly kind: 'ok'; readonly user: string }
  | { readonly kind: 'failed' }
  | { readonly kind: 'throttled'; readonly retryAfterSeconds: number };

const dummyHashes = new Map<string, Promise<string>>();

function dummyHash(params: ScryptParams): Promise<string> {
  const key = `${params.ln},${params.r},${params.p}`;
  let hash = dummyHashes.get(key);
  if (hash === undefined) {
    hash = hashPassword(randomToken(), params);
    dummyHashes.set(key, hash);
  }
  return hash;
}

export async function signIn(ctx: AuthContext, request: FastifyRequest, username: string, password: string): Promise<SignInResult> {
  const decision = await ctx.throttle.attempt(username, request.ip);
  if (!decision.allowed) return { kind: 'throttled', retryAfterSeconds: decision.retryAfterSeconds };
  const user = ctx.directory.user(username);
  if (user === undefined) {
    const sample = ctx.directory.anyPasswordHash();
    const params = (sample !== undefined ? parsePasswordHash(sample)?.params : undefined) ?? defaultScryptParams;
    await verifyPassword(password, await dummyHash(params));
    return { kind: 'failed' };
  }
  return (await verifyPassword(password, user.password_hash)) ? { kind: 'ok', user: user.username } : { kind: 'failed' };
}
