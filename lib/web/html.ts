// Server-rendered pages: every dynamic value goes through escapeHtml; pages need no script at all,
// so the CSP forbids it. sendPage sets the security headers every HTML answer carries.
import type { FastifyReply } from 'fastify';

const entities: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => entities[c] ?? c);
}

/** A fragment that is already safe HTML (built only from escaped values and literals). */
export interface Html {
  readonly html: string;
}

export function raw(html: string): Html {
  return { html };
}

/** Tagged template that escapes every interpolated string; Html values and arrays of them pass through. */
export function html(
  strings: TemplateStringsArray,
  ...values: (string | number | Html | readonly Html[] | undefined)[]
): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    if (value === undefined) out += '';
    else if (typeof value === 'string') out += escapeHtml(value);
    else if (typeof value === 'number') out += String(value);
    else if (Array.isArray(value)) out += value.map((v: Html) => v.html).join('');
    else out += (value as Html).html;
    out += strings[i + 1] ?? '';
  });
  return { html: out };
}

export function layout(title: string, body: Html): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Portcullis</title>
<link rel="stylesheet" href="/static/portcullis.css">
</head>
<body>
<main class="card">
${body}
</main>
</body>
</html>
`.html;
}

export interface PageOptions {
  readonly status?: number;
  /** Origins a form on this page may end up at (the client's redirect URI after a 303). */
  readonly formTargets?: readonly string[];
}

/**
 * Security headers of every HTML page: CSP without script, no framing (CSP frame-ancestors and
 * X-Frame-Options), no Referer (codes never leak through it), no caching of pages with CSRF tokens.
 * form-action also lists the client's origin: browsers apply it to the redirect after a POST.
 */
export function sendPage(
  reply: FastifyReply,
  title: string,
  body: Html,
  options: PageOptions = {},
): FastifyReply {
  const formAction = ["'self'", ...(options.formTargets ?? [])].join(' ');
  return reply
    .code(options.status ?? 200)
    .header('content-type', 'text/html; charset=utf-8')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'self'; img-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    )
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .header('x-content-type-options', 'nosniff')
    .send(layout(title, body));
}
