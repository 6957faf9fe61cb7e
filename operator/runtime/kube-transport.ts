// The transport under the real KubeClient (http-kube-client.ts): authentication headers from the
// KubeConfig (refreshed every minute), one pooled keep-alive dispatcher made from its TLS and
// credentials, the client-side request rate, and one record per request; a failed request becomes
// a KubeApiError from the API server's Status.
import { RequestContext, type HttpMethod, type KubeConfig } from '@kubernetes/client-node';
import { fetch, type Dispatcher } from 'undici';
import { KubeApiError } from './errors.ts';
import type { HttpKubeClientOptions, RequestRecord } from './http-kube-client.ts';

export interface StatusBody {
  message?: string;
  reason?: string;
  code?: number;
  /** A cause's kind is its `reason` in JSON (the Go field is StatusCause.Type). */
  details?: { causes?: Array<{ reason?: string }> };
}

export function parseStatus(text: string): StatusBody {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null) return parsed as StatusBody;
  } catch {
    // not JSON: fall through
  }
  return { message: text.slice(0, 500) };
}

export function createKubeTransport(
  clusterServer: string,
  kubeConfig: KubeConfig,
  options: HttpKubeClientOptions,
) {
  const server = clusterServer.replace(/\/+$/, '');
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  let dispatcher: Dispatcher | undefined;
  let dispatcherReady = false;

  // Authentication headers are refreshed every AUTH_REFRESH_MS (service-account tokens and token
  // files rotate, so never cached for long; client-go re-reads them every minute too). Computing
  // them per request would also build a fresh TLS agent each time inside client-node. The TLS
  // dispatcher is made once, so connections are pooled and kept alive.
  const AUTH_REFRESH_MS = 60_000;
  let cachedHeaders: { at: number; headers: Record<string, string> } | undefined;
  async function authenticate(url: string, method: HttpMethod): Promise<Record<string, string>> {
    const now = performance.now();
    if (cachedHeaders !== undefined && now - cachedHeaders.at < AUTH_REFRESH_MS)
      return { ...cachedHeaders.headers };
    const ctx = new RequestContext(url, method);
    await kubeConfig.applySecurityAuthentication(ctx);
    if (!dispatcherReady) {
      dispatcher = ctx.getDispatcher();
      dispatcherReady = true;
    }
    cachedHeaders = { at: now, headers: { ...ctx.getHeaders() } };
    return { ...cachedHeaders.headers };
  }

  async function request(
    verb: RequestRecord['verb'],
    resource: string,
    method: HttpMethod,
    path: string,
    query: Record<string, string | undefined>,
    body?: unknown,
    contentType = 'application/json',
    accept = 'application/json',
  ): Promise<{ status: number; json: unknown }> {
    await options.rateLimiter?.wait();
    const url = new URL(server + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
    const headers = await authenticate(url.toString(), method);
    headers['accept'] = accept;
    if (body !== undefined) headers['content-type'] = contentType;
    const started = performance.now();
    let status = 0;
    try {
      const response = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher,
        signal: AbortSignal.timeout(requestTimeoutMs),
      });
      status = response.status;
      const text = await response.text();
      if (status >= 200 && status < 300)
        return { status, json: text === '' ? undefined : JSON.parse(text) };
      if (status === 404 && (verb === 'get' || verb === 'delete'))
        return { status, json: undefined };
      const s = parseStatus(text);
      const causes = (s.details?.causes ?? [])
        .map((c) => c.reason)
        .filter((t): t is string => typeof t === 'string');
      throw new KubeApiError(
        status,
        `${method} ${path}: ${status} ${s.message ?? ''}`.trim(),
        s.reason,
        causes,
      );
    } finally {
      options.onRequest?.({ verb, resource, status, durationMs: performance.now() - started });
    }
  }

  /** The pooled dispatcher, once the first request has authenticated (undefined before). */
  const currentDispatcher = (): Dispatcher | undefined => dispatcher;
  return { server, authenticate, request, dispatcher: currentDispatcher };
}
