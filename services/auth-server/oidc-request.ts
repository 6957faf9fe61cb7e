// The OpenID Connect parameters of an authorization request (Core 3.1.2.1): nonce, prompt,
// max_age and login_hint, checked once. Parameters this server does not act on (display,
// ui_locales, claims_locales, acr_values, id_token_hint) are ignored, as Core says.
import { OAuthError } from './errors.ts';
import { MAX_NONCE_LENGTH } from './id-token.ts';
import { single, type Params } from './params.ts';

/** `select_account` is accepted and has nothing to select: one account per browser. */
export const PROMPTS = ['none', 'login', 'consent', 'select_account'] as const;
export type Prompt = (typeof PROMPTS)[number];

/** A login_hint longer than a username cannot name one; it is dropped rather than refused. */
const MAX_LOGIN_HINT_LENGTH = 64;
/** max_age above ten years is treated as ten years (s). */
const MAX_MAX_AGE_SECONDS = 10 * 365 * 86_400;

export interface OidcRequest {
  readonly nonce?: string;
  readonly prompt: readonly Prompt[];
  /** Seconds; the user signs in again when their authentication is older. */
  readonly maxAge?: number;
  readonly loginHint?: string;
}

const isPrompt = (value: string): value is Prompt => (PROMPTS as readonly string[]).includes(value);

/** The request's OIDC parameters; throws invalid_request for a malformed one. */
export function parseOidcRequest(params: Params): OidcRequest {
  const nonce = single(params, 'nonce');
  if (nonce.kind === 'value' && nonce.value.length > MAX_NONCE_LENGTH)
    throw new OAuthError('invalid_request', `nonce is longer than ${MAX_NONCE_LENGTH} characters`);

  const promptParam = single(params, 'prompt');
  const prompt = promptParam.kind === 'value' ? [...new Set(promptParam.value.split(' '))] : [];
  const unknown = prompt.filter((p) => !isPrompt(p));
  if (unknown.length > 0)
    throw new OAuthError(
      'invalid_request',
      `prompt value not supported: ${unknown.join(' ').slice(0, 60)}`,
    );
  if (prompt.includes('none') && prompt.length > 1)
    throw new OAuthError('invalid_request', 'prompt=none cannot be combined with other values');

  const maxAgeParam = single(params, 'max_age');
  let maxAge: number | undefined;
  if (maxAgeParam.kind === 'value') {
    if (!/^\d{1,12}$/.test(maxAgeParam.value))
      throw new OAuthError('invalid_request', 'max_age is a number of seconds');
    maxAge = Math.min(Number(maxAgeParam.value), MAX_MAX_AGE_SECONDS);
  }

  const hint = single(params, 'login_hint');
  return {
    ...(nonce.kind === 'value' ? { nonce: nonce.value } : {}),
    prompt: prompt.filter(isPrompt),
    ...(maxAge !== undefined ? { maxAge } : {}),
    ...(hint.kind === 'value' && hint.value.length <= MAX_LOGIN_HINT_LENGTH
      ? { loginHint: hint.value }
      : {}),
  };
}
