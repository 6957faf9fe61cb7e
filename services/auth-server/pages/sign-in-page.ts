import type { FastifyReply } from 'fastify';
import { html, sendPage } from '../../../lib/web/html.ts';

export interface SignInPageInput {
  /** Where the form posts (/auth/sign-in or /consents/sign-in). */
  readonly action: string;
  readonly interactionId: string;
  readonly csrf: string;
  /** Shown as "to continue to <clientName>". */
  readonly clientName?: string;
  readonly failed: boolean;
  readonly username?: string;
  /** Origin of the client's redirect URI: with consent already stored, the form's 303 goes there. */
  readonly redirectOrigin?: string;
}

export function sendSignInPage(reply: FastifyReply, input: SignInPageInput): FastifyReply {
  const lead =
    input.clientName === undefined
      ? html`to manage the applications you have allowed`
      : html`to continue to <strong>${input.clientName}</strong>`;
  return sendPage(
    reply,
    'Sign in',
    html`<h1 id="sign-in-title">Sign in</h1>
<p class="lead">${lead}</p>
${input.failed ? html`<p class="error" id="error-message" role="alert">The username or password is not correct.</p>` : html``}
<form method="post" action="${input.action}">
<input type="hidden" name="interaction" value="${input.interactionId}">
<input type="hidden" name="csrf" value="${input.csrf}">
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="username" autocapitalize="none" required value="${input.username ?? ''}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit" id="sign-in">Sign in</button>
</form>`,
    input.redirectOrigin !== undefined ? { formTargets: [input.redirectOrigin] } : {},
  );
}
