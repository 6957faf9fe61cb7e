// One pass over a request's raw headers, for plain requests and Upgrade requests alike: the limit
// key (the key header, or the bearer token in jwt mode), whether a body follows, and the headers to
// send upstream: hop-by-hop ones dropped with those Connection names (RFC 9110 section 7.6.1),
// X-Forwarded-For/-Proto/-Host added, Portcullis-Hops counted up (hop-limit.ts). No key header
// line is forwarded, nor any line whose name a CGI/WSGI server would read as the key header (`_` for
// `-`, any case: USER_ID is HTTP_USER_ID too): the caller adds the one identity it charged
// (the admission verdict's identity, sidecar/pipeline.ts), so the upstream reads exactly it.
import type { IncomingMessage } from 'node:http';
import { dropRequest, removeConnectionTokens } from './hop-by-hop.ts';
import { HOPS_HEADER, parseHops } from './hop-limit.ts';

export interface RequestHead {
  readonly forward: string[];
  /** The first key header's value (undefined in jwt mode, or when absent); never in `forward`. */
  readonly key: string | undefined;
  readonly authorization: string | undefined;
  /** Host headers seen: more than one is a bad request. */
  readonly hostCount: number;
  /** Transfer-Encoding, or a Content-Length other than 0. */
  readonly hasBody: boolean;
  /** The Upgrade header's values, joined; undefined when absent. */
  readonly upgrade: string | undefined;
  /** Portcullis gateways the request passed before this one (its Portcullis-Hops header). */
  readonly hops: number;
}

export function readRequestHead(
  req: IncomingMessage,
  keyHeader: string,
  jwt: boolean,
): RequestHead {
  const raw = req.rawHeaders;
  const keyLength = keyHeader.length;
  // Only a name with `_`, or any name when the key header has one, can fold into it under CGI.
  // (No replaceAll per request unless needed: it costs more than the rest of this loop.)
  const keyFolds = keyHeader.includes('_');
  const keyCgi = keyFolds ? keyHeader.replaceAll('_', '-') : keyHeader;
  const forward: string[] = [];
  let key: string | undefined;
  let authorization: string | undefined;
  let hasBody = false;
  let xff: string | undefined;
  let connection: string | undefined;
  let upgrade: string | undefined;
  let sawProto = false;
  let sawHost = false;
  let host: string | undefined;
  let hostCount = 0;
  let hops = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const lower = name.toLowerCase();
    if (
      name.length === keyLength &&
      (lower === keyHeader ||
        ((keyFolds || lower.includes('_')) && lower.replaceAll('_', '-') === keyCgi))
    ) {
      if (!jwt && key === undefined && lower === keyHeader) key = value;
      continue;
    }
    if (dropRequest.has(lower)) {
      if (lower === 'transfer-encoding') hasBody = true;
      else if (lower === 'connection')
        connection = connection === undefined ? value : `${connection}, ${value}`;
      else if (lower === 'upgrade')
        upgrade = upgrade === undefined ? value : `${upgrade}, ${value}`;
      continue;
    }
    switch (lower) {
      case 'content-length':
        if (value !== '0') hasBody = true;
        break;
      case 'authorization':
        if (authorization === undefined) authorization = value;
        break;
      case 'x-forwarded-for':
        xff = xff === undefined ? value : `${xff}, ${value}`;
        continue;
      case 'x-forwarded-proto':
        sawProto = true;
        break;
      case 'x-forwarded-host':
        sawHost = true;
        break;
      case 'host':
        host = value;
        hostCount++;
        break;
      case HOPS_HEADER:
        hops = Math.max(hops, parseHops(value));
        continue;
    }
    forward.push(name, value);
  }
  if (connection !== undefined) removeConnectionTokens(forward, connection);
  const socket = req.socket;
  forward.push(
    'x-forwarded-for',
    xff === undefined ? (socket.remoteAddress ?? '') : `${xff}, ${socket.remoteAddress ?? ''}`,
  );
  if (!sawProto)
    forward.push(
      'x-forwarded-proto',
      'encrypted' in socket && socket.encrypted === true ? 'https' : 'http',
    );
  if (!sawHost && host !== undefined) forward.push('x-forwarded-host', host);
  forward.push(HOPS_HEADER, String(hops + 1));
  return { forward, key, authorization, hostCount, hasBody, upgrade, hops };
}

/** Separators of a key header name spelled both ways at most (2^8 - 1 look-alikes). */
const MAX_FOLDED_SEPARATORS = 8;

/**
 * The other spellings of a (lower-case) key header name that a CGI/WSGI server reads as it: each
 * `-` or `_` as either, other than the name itself. A gateway that forwards the client's own
 * headers (decision mode) is told to remove them. Past MAX_FOLDED_SEPARATORS separators only the
 * first ones vary (the rest kept as written) and the all-`_` and all-`-` spellings are added.
 */
export function keyLookAlikes(keyHeader: string): string[] {
  // Words and separators alternately: ['user', '-', 'id'].
  const pieces = keyHeader.split(/([-_])/);
  const seps = Math.min((pieces.length - 1) / 2, MAX_FOLDED_SEPARATORS);
  const out = new Set<string>();
  for (let mask = 0; mask < 1 << seps; mask++) {
    out.add(
      pieces
        .map((p, i) =>
          i % 2 === 1 && (i - 1) / 2 < seps ? ((mask >> ((i - 1) / 2)) & 1 ? '_' : '-') : p,
        )
        .join(''),
    );
  }
  out.add(keyHeader.replaceAll('-', '_'));
  out.add(keyHeader.replaceAll('_', '-'));
  out.delete(keyHeader);
  return [...out];
}
