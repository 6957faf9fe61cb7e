// Password sign-in behind the throttle and the password gate. An unknown username costs the same
// scrypt work as a known one (a dummy hash with the parameters the users file uses), so timing
// does not reveal which usernames exist.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthContext } from './context.ts';
import { sendErrorPage } from './pages/error-page.ts';
import { GateFull } from './password-gate.ts';
import { addressKey } from './throttle.ts';
import {
  defaultScryptParams,
  hashPassword,
  parsePasswordHash,
  verifyPassword,
  type ScryptParams,
} from '../../lib/config/passwords.ts';
import { randomToken } from './random.ts';

export type SignInResult =
  | { readonly kind: 'ok'; readonly user: string }
  | { readonly kind: 'failed' }
  | { readonly kind: 'throttled'; readonly retryAfterSeconds: number }
  /** Too many sign-ins are being checked at once (the password gate is full). */
  | { readonly kind: 'busy'; readonly retryAfterSeconds: number };

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

/** One password sign-in, counted in portcullis_auth_sign_ins_total by its result. */
export async function signIn(
  ctx: AuthContext,
  request: FastifyRequest,
  username: string,
  password: string,
): Promise<SignInResult> {
  let result: SignInResult;
  try {
    result = await checkSignIn(ctx, request, username, password);
  } catch (err) {
    ctx.metrics.signIns.inc({ result: 'error' });
    throw err;
  }
  ctx.metrics.signIns.inc({ result: result.kind });
  return result;
}

async function checkSignIn(
  ctx: AuthContext,
  request: FastifyRequest,
  username: string,
  password: string,
): Promise<SignInResult> {
  const decision = await ctx.throttle.attempt(username, request.ip);
  if (!decision.allowed)
    return { kind: 'throttled', retryAfterSeconds: decision.retryAfterSeconds };
  const user = ctx.directory.user(username);
  // The gate's share is per client address, keyed as the throttle keys it (IPv6 by /64).
  const key = addressKey(request.ip);
  try {
    if (user === undefined) {
      const sample = ctx.directory.anyPasswordHash();
      const params =
        (sample !== undefined ? parsePasswordHash(sample)?.params : undefined) ??
        defaultScryptParams;
      const dummy = await dummyHash(params);
      await ctx.passwordGate.run(key, () => verifyPassword(password, dummy));
      return { kind: 'failed' };
    }
    return (await ctx.passwordGate.run(key, () => verifyPassword(password, user.password_hash)))
      ? { kind: 'ok', user: user.username }
      : { kind: 'failed' };
  } catch (err) {
    if (err instanceof GateFull) {
      if (err.reason === 'full') request.log.warn('sign-in refused: the password gate is full');
      else request.log.info('sign-in refused: this address already has sign-ins being checked');
      return { kind: 'busy', retryAfterSeconds: err.retryAfterSeconds };
    }
    throw err;
  }
}

/** The page for a sign-in that was not checked: 429 when throttled, 503 when the gate is full. */
export function sendRefusedSignIn(
  reply: FastifyReply,
  result: Extract<SignInResult, { kind: 'throttled' | 'busy' }>,
): FastifyReply {
  reply.header('retry-after', String(result.retryAfterSeconds));
  return result.kind === 'throttled'
    ? sendErrorPage(
        reply,
        429,
        'Too many attempts',
        `Too many sign-in attempts. Try again in ${result.retryAfterSeconds} seconds.`,
      )
    : sendErrorPage(
        reply,
        503,
        'Try again in a moment',
        'Many people are signing in right now. Try again in a moment.',
      );
}
