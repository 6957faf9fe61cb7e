// Hop-by-hop header handling (RFC 9110 section 7.6.1), shared by both directions of the proxy.

/** Request headers never forwarded (hop-by-hop, or handled by this hop). */
export const dropRequest = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authorization',
  'expect',
]);
/** Response headers never forwarded. */
export const dropResponse = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authenticate',
]);

/** Removes headers named by the Connection header (RFC 9110 section 7.6.1). */
export function removeConnectionTokens(forward: string[], connection: string): void {
  // The common values name no header: skip the work.
  if (connection.length <= 10) {
    const v = connection.toLowerCase();
    if (v === 'keep-alive' || v === 'close') return;
  }
  const names = new Set(
    connection
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter((t) => t !== ''),
  );
  names.delete('close');
  names.delete('keep-alive');
  if (names.size === 0) return;
  for (let i = forward.length - 2; i >= 0; i -= 2) {
    if (names.has((forward[i] as string).toLowerCase())) forward.splice(i, 2);
  }
}
