import type { FastifyReply } from 'fastify';
import type { Consent } from '../stores/types.ts';
import { html, sendPage } from '../../../lib/web/html.ts';

export interface ConsentsPageInput {
  readonly username: string;
  readonly csrf: string;
  readonly consents: readonly { clientId: string; clientName: string; consent: Consent }[];
}

export function sendConsentsPage(reply: FastifyReply, input: ConsentsPageInput): FastifyReply {
  const rows = input.consents.map(
    ({ clientId, clientName, consent }) => html`<li class="consent" data-client-id="${clientId}">
<strong>${clientName}</strong> <code>${consent.scopes.join(' ')}</code>
<span class="hint">since ${new Date(consent.grantedAt).toISOString()}</span>
<form method="post" action="/consents/revoke">
<input type="hidden" name="csrf" value="${input.csrf}">
<input type="hidden" name="client_id" value="${clientId}">
<button type="submit" class="secondary">Revoke</button>
</form>
</li>`,
  );
  return sendPage(
    reply,
    'Connected applications',
    html`<h1>Connected applications</h1>
<p class="lead">Signed in as <strong>${input.username}</strong>.</p>
${rows.length === 0 ? html`<p id="no-consents">No application has access to your account.</p>` : html`<ul class="consents">${rows}</ul>`}
<form method="post" action="/consents/sign-out">
<input type="hidden" name="csrf" value="${input.csrf}">
<button type="submit" class="secondary">Sign out</button>
</form>`,
  );
}
