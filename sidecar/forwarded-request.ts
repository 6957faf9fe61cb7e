// Which request a decision-service HTTP check is about. Forward-auth gateways send a check
// request of their own and name the original in headers: Traefik's ForwardAuth and Caddy's
// forward_auth X-Forwarded-Method and X-Forwarded-Uri, nginx's auth_request whatever its
// configuration sets (docs/concepts/gateway.md: X-Original-Method and X-Original-URI). Those headers are
// believed only from trusted peers (decision.trustedProxies): anyone else could name any path
// and spend or dodge another route's budget. Otherwise the check request itself is the original,
// as Envoy's HTTP ext_authz sends it (its path_prefix removed).
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

export interface OriginalRequest {
  readonly method: string;
  /** Origin-form target: path and query. */
  readonly target: string;
  /** 'forwarded': named by a trusted peer's headers; 'direct': the check request itself. */
  readonly via: 'forwarded' | 'direct';
}

/** A set of trusted peers from addresses and CIDR blocks (validated by the config schema). */
export function trustedPeers(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', bits] = entry.split('/');
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(bits), family);
  }
  return list;
}

const V4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/** True when the socket's peer is in `trusted` (an IPv4-mapped IPv6 peer counts as its IPv4 address). */
export function isTrustedPeer(trusted: BlockList, address: string | undefined): boolean {
  if (address === undefined) return false;
  const mapped = V4_MAPPED.exec(address);
  if (mapped !== null) return trusted.check(mapped[1] as string, 'ipv4');
  return trusted.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

const first = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/** The original request of a check: from a trusted peer's forward-auth headers, or the check request itself. */
export function originalRequest(
  req: IncomingMessage,
  trusted: BlockList,
  pathPrefix: string,
): OriginalRequest {
  const h = req.headers;
  if (isTrustedPeer(trusted, req.socket.remoteAddress)) {
    const uri = first(h['x-forwarded-uri']) ?? first(h['x-original-uri']);
    if (uri !== undefined) {
      const method =
        first(h['x-forwarded-method']) ?? first(h['x-original-method']) ?? req.method ?? 'GET';
      return { method: method.toUpperCase(), target: uri, via: 'forwarded' };
    }
  }
  const url = req.url ?? '';
  const target =
    pathPrefix !== '' &&
    url.startsWith(pathPrefix) &&
    (url.length === pathPrefix.length || '/?'.includes(url[pathPrefix.length] as string))
      ? url.slice(pathPrefix.length) || '/'
      : url;
  return {
    method: req.method ?? 'GET',
    target: target.startsWith('?') ? `/${target}` : target,
    via: 'direct',
  };
}
