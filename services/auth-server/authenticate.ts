// Password sign-in behind the throttle. An unknown username costs the same scrypt work as a known
// one (a dummy hash), so timing does not reveal which usernames exist.
import type { FastifyRequest } from 'fastify';
import type { AuthContext } from './context.ts';
import { defaultScryptParams, hashPassword, verifyPassword } from './passwords.ts';
import { randomToken } from './random.ts';

export type SignInResult =
  | { readonly kind: 'ok'; readonly user: string }
  | { readonly kind: 'failed' }
  | { readonly kind: 'throttled'; readonly retryAfterSeconds: number };

let dummyHash: Promise<string> | undefined;

export async function signIn(ctx: AuthContext, request: FastifyRequest, username: string, password: string): Promise<SignInResult> {
  const decision = await ctx.throttle.attempt(username, request.ip);
  if (!decision.allowed) return { kind: 'throttled', retryAfterSeconds: decision.retryAfterSeconds };
  const user = ctx.directory.user(username);
  if (user === undefined) {
    dummyHash ??= hashPassword(randomToken(), defaultScryptParams);
    await verifyPassword(password, await dummyHash);
    return { kind: 'failed' };
  }
  return (await verifyPassword(password, user.password_hash)) ? { kind: 'ok', user: user.username } : { kind: 'failed' };
}
