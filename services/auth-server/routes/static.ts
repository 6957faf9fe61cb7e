// The one stylesheet of the pages (the CSP allows styles from 'self' only, no inline styles).
import type { FastifyPluginAsync } from 'fastify';

const css = `:root{font-family:system-ui,sans-serif;color:#1d2430;background:#eef1f5}
body{margin:0;display:flex;justify-content:center;padding:4rem 1rem}
.card{background:#fff;max-width:26rem;width:100%;padding:2rem;border-radius:.5rem;box-shadow:0 1px 4px #0002}
h1{margin-top:0;font-size:1.5rem}
label{display:block;margin-top:1rem;font-weight:600}
input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;margin-top:.25rem;font-size:1rem}
button{margin-top:1.25rem;padding:.55rem 1.2rem;font-size:1rem;border:0;border-radius:.3rem;background:#2456c7;color:#fff;cursor:pointer}
button.secondary{background:#e3e7ee;color:#1d2430}
.decision button{margin-right:.5rem}
.error{color:#a4161a;font-weight:600}
.hint{color:#5b6475;font-size:.9rem}
ul.scopes li,ul.consents li{margin:.5rem 0}
`;

export const staticRoute: FastifyPluginAsync = async (app) => {
  app.get('/static/portcullis.css', async (_request, reply) =>
    reply
      .header('cache-control', 'public, max-age=3600')
      .header('x-content-type-options', 'nosniff')
      .type('text/css; charset=utf-8')
      .send(css),
  );
};
