// The nginx and Caddy snippets of docs/concepts/gateway.md ("Use with your gateway") are the ones the
// integration tier runs (test/harness/gateways/gateways.ts; the fail-open Caddy site in the kind cluster), with the docs' placeholder addresses.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { caddySite, nginxServer } from '../harness/gateways/gateways.ts';

const squash = (text: string) => text.replace(/\s+/g, ' ').trim();
const docs = squash(
  readFileSync(new URL('../../docs/concepts/gateway.md', import.meta.url), 'utf8'),
);

describe('docs/concepts/gateway.md gateway snippets', () => {
  it('shows the nginx server block the nginx test runs', () => {
    expect(docs).toContain(squash(nginxServer('80', 'portcullis-decision:8080', 'orders:8081')));
  });

  it('shows the Caddy site the Caddy test runs', () => {
    expect(docs).toContain(squash(caddySite(':80', 'portcullis-decision:8080', 'orders:8081')));
  });

  it('shows the fail-open Caddy site the kind cluster runs', () => {
    expect(docs).toContain(
      squash(caddySite(':80', 'portcullis-decision:8080', 'orders:8081', { failOpen: true })),
    );
  });
});
