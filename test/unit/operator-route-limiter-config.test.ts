// spec.limiter -> the limiter section of the sidecar config: the single-limit form, rules,
// shadow mode and the jwt key with its defaults from the namespace's auth server. Every rendered
// file is also parsed with the sidecar's own schema, as the operator does before writing it.
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseSidecarConfigText } from '../../lib/config/sidecar.ts';
import { authServerConfigSchema } from '../../lib/config/auth-server.ts';
import { renderSidecarConfig } from '../../operator/resources/route/config-map.ts';
import { AUTH_SERVER_AUDIENCE } from '../../operator/resources/shared/settings.ts';
import { route, settings } from './operator-fixtures.ts';

/** The limiter section as written to the ConfigMap (before the sidecar's defaults). */
function renderedLimiter(limiter: Record<string, unknown>, s = settings): Record<string, unknown> {
  const text = renderSidecarConfig(route('all', { limiter }), s);
  parseSidecarConfigText(text); // the sidecar accepts it
  return (parse(text) as { limiter: Record<string, unknown> }).limiter;
}

const common = { onMissingKey: { status: 400 }, onStoreError: 'allow' };

describe('spec.limiter -> sidecar config', () => {
  it('path handling: mergeSlashes and caseInsensitivePaths reach the route section when set, the sidecar defaults otherwise', () => {
    const routeOf = (spec: Record<string, unknown>) =>
      parseSidecarConfigText(renderSidecarConfig(route('all', spec), settings)).route;
    expect(routeOf({})).toMatchObject({ mergeSlashes: true, caseInsensitivePaths: false });
    expect(routeOf({ mergeSlashes: false, caseInsensitivePaths: true })).toMatchObject({
      mergeSlashes: false,
      caseInsensitivePaths: true,
    });
    expect(parse(renderSidecarConfig(route('all'), settings))).toMatchObject({
      route: { id: 'all', path: '/**' },
    });
    expect(
      (parse(renderSidecarConfig(route('all'), settings)) as { route: object }).route,
    ).not.toHaveProperty('mergeSlashes');
  });

  it('single-limit form: the three fields as given, an absent requestedTokens stays absent (the sidecar counts 1)', () => {
    expect(renderedLimiter({ replenishRate: 2, burstCapacity: 20 })).toEqual({
      replenishRate: 2,
      burstCapacity: 20,
      unmatched: 'forward',
      enforce: true,
      key: 'header',
      keyHeader: 'USER-ID',
      ...common,
    });
    const text = renderSidecarConfig(
      route('all', { limiter: { replenishRate: 2, burstCapacity: 20 } }),
      settings,
    );
    expect(parseSidecarConfigText(text).limiter.requestedTokens).toBeUndefined();
    expect(
      renderedLimiter({ replenishRate: 2, burstCapacity: 20, requestedTokens: 5 })[
        'requestedTokens'
      ],
    ).toBe(5);
  });

  it('rules form: every rule in order with its path, methods, limits and enforce; unmatched and enforce of the limiter', () => {
    const limiter = renderedLimiter({
      rules: [
        {
          name: 'writes',
          path: '/api/**',
          methods: ['POST', 'PUT'],
          limits: [
            { replenishRate: 1, burstCapacity: 5, requestedTokens: 2 },
            { replenishRate: 10, burstCapacity: 600 },
          ],
          enforce: true,
        },
        { name: 'reads', methods: ['GET'], limits: [{ replenishRate: 20, burstCapacity: 100 }] },
      ],
      unmatched: 'refuse',
      enforce: false,
      keyHeader: 'X-Tenant',
    });
    expect(limiter).toEqual({
      rules: [
        {
          name: 'writes',
          path: '/api/**',
          methods: ['POST', 'PUT'],
          limits: [
            { replenishRate: 1, burstCapacity: 5, requestedTokens: 2 },
            { replenishRate: 10, burstCapacity: 600 },
          ],
          enforce: true,
        },
        {
          name: 'reads',
          path: '/**',
          methods: ['GET'],
          limits: [{ replenishRate: 20, burstCapacity: 100 }],
        },
      ],
      unmatched: 'refuse',
      enforce: false,
      key: 'header',
      keyHeader: 'X-Tenant',
      ...common,
    });
  });

  it('shadow mode of a single-limit route reaches the sidecar', () => {
    const text = renderSidecarConfig(
      route('all', { limiter: { replenishRate: 1, burstCapacity: 10, enforce: false } }),
      settings,
    );
    expect(parseSidecarConfigText(text).limiter.enforce).toBe(false);
  });

  it('jwt key without issuer or audience: the auth server of the route namespace, its JWKS and its audience; the claim defaults in the sidecar', () => {
    const limiter = renderedLimiter({
      replenishRate: 1,
      burstCapacity: 10,
      key: { source: 'jwt' },
      keyHeader: 'X-User',
    });
    expect(limiter['key']).toBe('jwt');
    expect(limiter['keyHeader']).toBe('X-User');
    expect(limiter['jwt']).toEqual({
      issuer: 'http://portcullis-auth-server.team-a.svc',
      audience: 'urn:portcullis:user-service',
      jwksUrl: 'http://portcullis-auth-server.team-a.svc/jwks.json',
    });
    const sidecar = parseSidecarConfigText(
      renderSidecarConfig(
        route('all', { limiter: { replenishRate: 1, burstCapacity: 10, key: { source: 'jwt' } } }),
        settings,
      ),
    );
    expect(sidecar.limiter.jwt?.claim).toBe('sub');
  });

  it('jwt key defaults: the issuer follows the operator setting ({namespace} replaced), the keys come from the auth server Service inside the cluster', () => {
    const custom = { ...settings, issuerUrl: 'https://auth-{namespace}.example.com/' };
    expect(
      renderedLimiter({ replenishRate: 1, burstCapacity: 10, key: { source: 'jwt' } }, custom)[
        'jwt'
      ],
    ).toEqual({
      issuer: 'https://auth-team-a.example.com/',
      audience: AUTH_SERVER_AUDIENCE,
      jwksUrl: 'http://portcullis-auth-server.team-a.svc/jwks.json',
    });
    expect(
      renderedLimiter(
        { replenishRate: 1, burstCapacity: 10, key: { source: 'jwt' } },
        { ...custom, servicePort: 8080 },
      )['jwt'],
    ).toMatchObject({
      jwksUrl: 'http://portcullis-auth-server.team-a.svc:8080/jwks.json',
    });
  });

  it('jwt key with an issuer of its own: url + /jwks.json unless jwksUrl is given; claim and audience as given', () => {
    expect(
      renderedLimiter({
        replenishRate: 1,
        burstCapacity: 10,
        key: {
          source: 'jwt',
          issuer: { url: 'https://id.example.com' },
          audience: 'api://orders',
          claim: 'client_id',
        },
      })['jwt'],
    ).toEqual({
      issuer: 'https://id.example.com',
      audience: 'api://orders',
      jwksUrl: 'https://id.example.com/jwks.json',
      claim: 'client_id',
    });
    expect(
      renderedLimiter({
        replenishRate: 1,
        burstCapacity: 10,
        key: {
          source: 'jwt',
          issuer: {
            url: 'https://id.example.com/',
            jwksUrl: 'https://id.example.com/.well-known/jwks.json',
          },
        },
      })['jwt'],
    ).toEqual({
      issuer: 'https://id.example.com/',
      audience: AUTH_SERVER_AUDIENCE,
      jwksUrl: 'https://id.example.com/.well-known/jwks.json',
    });
  });

  it('the default audience is the one the auth server stamps when nothing sets AUTH_AUDIENCE', () => {
    const config = authServerConfigSchema.parse({ AUTH_CLIENTS_FILE: 'c', AUTH_USERS_FILE: 'u' });
    expect(config.AUTH_AUDIENCE).toBe(AUTH_SERVER_AUDIENCE);
  });

  it('renders deterministically: the same route gives the same text, so a no-op reconcile writes nothing', () => {
    const limiter = {
      rules: [
        { name: 'b', limits: [{ replenishRate: 1, burstCapacity: 2 }] },
        { name: 'a', methods: ['DELETE', 'GET'], limits: [{ replenishRate: 3, burstCapacity: 4 }] },
      ],
      key: { source: 'jwt', claim: 'sub' },
    };
    const once = renderSidecarConfig(route('all', { limiter }), settings);
    expect(renderSidecarConfig(route('all', { limiter: structuredClone(limiter) }), settings)).toBe(
      once,
    );
    expect(
      (parse(once) as { limiter: { rules: Array<{ name: string }> } }).limiter.rules.map(
        (r) => r.name,
      ),
    ).toEqual(['b', 'a']);
  });
});
