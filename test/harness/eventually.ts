// Waiting for something to happen without guessing how long it takes: poll for the condition.

/**
 * Polls fn every `everyMs` until it returns a value other than undefined or false (an exception
 * counts as not yet), and returns that value; throws after timeoutMs, naming `what` and the last error.
 */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `${what}: not within ${timeoutMs} ms${last === undefined ? '' : ` (last error: ${String(last)})`}`,
      );
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
