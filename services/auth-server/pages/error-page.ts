import type { FastifyReply } from 'fastify';
import { html, sendPage } from '../../../lib/web/html.ts';

/** An error the person sees in the browser (bad client_id or redirect_uri, expired form, ...). Never a redirect. */
export function sendErrorPage(
  reply: FastifyReply,
  status: number,
  title: string,
  message: string,
): FastifyReply {
  return sendPage(
    reply,
    title,
    html`<h1>${title}</h1>
<p class="error" id="error-message">${message}</p>
<p class="hint">You can close this page and start again from the application you came from.</p>`,
    { status },
  );
}
