import type { FastifyReply } from 'fastify';
import { scopeDescription } from '../scopes.ts';
import { html, sendPage } from '../../../lib/web/html.ts';

export interface ConsentPageInput {
  readonly interactionId: string;
  readonly csrf: string;
  readonly clientName: string;
  readonly username: string;
  readonly scopes: readonly string[];
  /** Origin of the redirect URI: the 303 after this form goes there. */
  readonly redirectOrigin: string;
}

export function sendConsentPage(reply: FastifyReply, input: ConsentPageInput): FastifyReply {
  const items = input.scopes.map(
    (s) => html`<li><code>${s}</code> ${scopeDescription(s) ?? ''}</li>`,
  );
  return sendPage(
    reply,
    'Allow access',
    html`<h1 id="consent-title">Allow access?</h1>
<p class="lead"><strong>${input.clientName}</strong> asks to access your account <strong>${input.username}</strong>:</p>
<ul class="scopes">${items}</ul>
<p class="hint">You can withdraw this later on the <a href="/consents">Connected applications</a> page.</p>
<form method="post" action="/auth/consent" class="decision">
<input type="hidden" name="interaction" value="${input.interactionId}">
<input type="hidden" name="csrf" value="${input.csrf}">
<button type="submit" name="decision" value="allow" id="allow">Allow</button>
<button type="submit" name="decision" value="deny" id="deny" class="secondary">Deny</button>
</form>`,
    { formTargets: [input.redirectOrigin] },
  );
}
