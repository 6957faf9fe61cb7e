// The real KubeClient: REST over undici, with authentication (client certificates, bearer
// tokens, in-cluster service-account token, exec plugins) taken from @kubernetes/client-node's
// KubeConfig. client-node's KubernetesObjectApi does server-side apply too; this thin layer exists
// for what it does not give the operator:
// - server-side apply of the status subresource (the reconcilers write status with their own
//   field manager, never the whole object);
// - one record per request (verb, resource, status, duration) for the operator's metrics and the
//   benchmark's request counts, watches included;
// - one pooled keep-alive dispatcher for every request, made once from the KubeConfig's TLS and
//   credentials, instead of per-call set-up;
// - objects kept as the API server sent them (plain JSON with string timestamps), not converted
//   into the generated model classes and back;
// - a client-side request rate (rateLimiter): every request, each page of a list, and the opening
//   of a watch take a token; a watch's events, however many, take none.
import { HttpMethod, type KubeConfig } from '@kubernetes/client-node';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { fetch } from 'undici';
import { KubeApiError } from './errors.ts';
import type {
  KubeClient,
  ListOptions,
  ListResult,
  WatchEvent,
  WatchOptions,
} from './kube-client.ts';
import type { KubeObject } from './kube-object.ts';
import { createKubeTransport, parseStatus, type StatusBody } from './kube-transport.ts';
import type { RequestRateLimiter } from './request-rate-limiter.ts';
import { apiVersionOf, resourcePath, resourceTypeOf, type ResourceType } from './resource-types.ts';

/** Server-side apply's media type; JSON is YAML, so a JSON body with this type is an apply patch. */
/** Accept headers asking for metadata only (falling back to whole objects on a server without it). */
const METADATA_LIST_ACCEPT =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const METADATA_ACCEPT =
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
/**
 * Objects per list page: a list is read page by page (limit + continue), so that the operator
 * never holds more than one page of whole objects it may drop (1.5 MiB each at most in etcd).
 */
export const LIST_PAGE_SIZE = 50;
export const METADATA_LIST_PAGE_SIZE = 500;

export const APPLY_PATCH_CONTENT_TYPE = 'application/apply-patch+yaml';

export interface RequestRecord {
  verb: 'get' | 'list' | 'watch' | 'apply' | 'create' | 'update' | 'delete';
  resource: string;
  status: number;
  durationMs: number;
}

export interface HttpKubeClientOptions {
  fieldManager: string;
  /** Called after every request (metrics). */
  onRequest?: (record: RequestRecord) => void;
  /** Per-request timeout for everything but watches, ms. */
  requestTimeoutMs?: number;
  /** The client-side request rate; unset: requests go at once. */
  rateLimiter?: RequestRateLimiter;
}

export function createHttpKubeClient(
  kubeConfig: KubeConfig,
  options: HttpKubeClientOptions,
): KubeClient {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('kubeconfig has no current cluster');
  const { server, authenticate, request, dispatcher } = createKubeTransport(
    cluster.server,
    kubeConfig,
    options,
  );
  function pathOf(obj: KubeObject, subresource?: string): { type: ResourceType; path: string } {
    const type = resourceTypeOf(obj.apiVersion, obj.kind);
    return {
      type,
      path: resourcePath(type, obj.metadata.namespace, obj.metadata.name, subresource),
    };
  }

  function asObject(json: unknown, what: string): KubeObject {
    if (typeof json !== 'object' || json === null || !('metadata' in json))
      throw new Error(`unexpected answer to ${what}`);
    return json as KubeObject;
  }

  // One transport (dispatcher, credentials, request rate) for every field manager's client.
  const clientAs = (fieldManager: string): KubeClient => ({
    withFieldManager: clientAs,

    async get(type, namespace, name) {
      const { status, json } = await request(
        'get',
        type.plural,
        HttpMethod.GET,
        resourcePath(type, namespace, name),
        {},
      );
      return status === 404 ? undefined : asObject(json, 'get');
    },

    async list(type, opts: ListOptions = {}): Promise<ListResult> {
      const items: KubeObject[] = [];
      const limit = String(opts.metadataOnly === true ? METADATA_LIST_PAGE_SIZE : LIST_PAGE_SIZE);
      const accept = opts.metadataOnly === true ? METADATA_LIST_ACCEPT : 'application/json';
      let token: string | undefined;
      let resourceVersion = '';
      do {
        const query = { labelSelector: opts.labelSelector, limit, continue: token };
        const { json } = await request(
          'list',
          type.plural,
          HttpMethod.GET,
          resourcePath(type, opts.namespace),
          query,
          undefined,
          undefined,
          accept,
        );
        const page = json as {
          items?: KubeObject[];
          metadata?: { resourceVersion?: string; continue?: string };
        };
        // List items carry no apiVersion/kind (metadata-only ones say PartialObjectMetadata): put
        // the kind back so that every object is self-describing.
        for (const item of page.items ?? []) {
          const obj = { ...item, apiVersion: apiVersionOf(type), kind: type.kind };
          if (opts.keep === undefined || opts.keep(obj)) items.push(obj);
        }
        resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
        token = page.metadata?.continue === '' ? undefined : page.metadata?.continue;
      } while (token !== undefined);
      return { items, resourceVersion };
    },

    async watch(
      type,
      opts: WatchOptions,
      onEvent: (event: WatchEvent) => void,
      signal: AbortSignal,
    ) {
      await options.rateLimiter?.wait(signal);
      if (signal.aborted) return;
      const path = resourcePath(type, opts.namespace);
      const url = new URL(server + path);
      url.searchParams.set('watch', 'true');
      url.searchParams.set('allowWatchBookmarks', 'true');
      url.searchParams.set('resourceVersion', opts.resourceVersion);
      if (opts.labelSelector !== undefined)
        url.searchParams.set('labelSelector', opts.labelSelector);
      const timeoutSeconds = opts.timeoutSeconds ?? 300;
      url.searchParams.set('timeoutSeconds', String(timeoutSeconds));
      const headers = await authenticate(url.toString(), HttpMethod.GET);
      headers['accept'] = opts.metadataOnly === true ? METADATA_ACCEPT : 'application/json';
      // A dead connection shows as silence: abort when nothing arrived for longer than the
      // server's own timeout plus a margin.
      const idle = new AbortController();
      const idleMs = (timeoutSeconds + 30) * 1000;
      let idleTimer = setTimeout(() => idle.abort(new Error('watch idle')), idleMs);
      const started = performance.now();
      let status = 0;
      try {
        const response = await fetch(url, {
          method: 'GET',
          headers,
          dispatcher: dispatcher(),
          signal: AbortSignal.any([signal, idle.signal]),
        });
        status = response.status;
        if (status !== 200 || response.body === null) {
          const s = parseStatus(await response.text());
          throw new KubeApiError(
            status,
            `watch ${path}: ${status} ${s.message ?? ''}`.trim(),
            s.reason,
          );
        }
        const lines = createInterface({
          input: Readable.fromWeb(response.body),
          crlfDelay: Infinity,
        });
        for await (const line of lines) {
          clearTimeout(idleTimer);
          idleTimer = setTimeout(() => idle.abort(new Error('watch idle')), idleMs);
          if (line.trim() === '') continue;
          const event = JSON.parse(line) as { type: string; object: KubeObject & StatusBody };
          if (event.type === 'ERROR') {
            const code = event.object.code ?? 500;
            throw new KubeApiError(
              code,
              `watch ${path}: ${code} ${event.object.message ?? ''}`.trim(),
              event.object.reason,
            );
          }
          if (
            event.type === 'ADDED' ||
            event.type === 'MODIFIED' ||
            event.type === 'DELETED' ||
            event.type === 'BOOKMARK'
          ) {
            const object =
              opts.metadataOnly === true
                ? { ...event.object, apiVersion: apiVersionOf(type), kind: type.kind }
                : {
                    ...event.object,
                    apiVersion: event.object.apiVersion ?? apiVersionOf(type),
                    kind: event.object.kind ?? type.kind,
                  };
            onEvent({ type: event.type, object });
          }
        }
      } catch (err) {
        if (signal.aborted) return;
        throw err;
      } finally {
        clearTimeout(idleTimer);
        options.onRequest?.({
          verb: 'watch',
          resource: type.plural,
          status,
          durationMs: performance.now() - started,
        });
      }
    },

    async apply(obj, subresource, as) {
      const { type, path } = pathOf(obj, subresource);
      const { json } = await request(
        'apply',
        subresource === undefined ? type.plural : `${type.plural}/${subresource}`,
        HttpMethod.PATCH,
        path,
        { fieldManager: as ?? fieldManager, force: 'true' },
        obj,
        APPLY_PATCH_CONTENT_TYPE,
      );
      return asObject(json, 'apply');
    },

    async create(obj) {
      const type = resourceTypeOf(obj.apiVersion, obj.kind);
      const { json } = await request(
        'create',
        type.plural,
        HttpMethod.POST,
        resourcePath(type, obj.metadata.namespace),
        { fieldManager },
        obj,
      );
      return asObject(json, 'create');
    },

    async update(obj) {
      const { type, path } = pathOf(obj);
      const { json } = await request(
        'update',
        type.plural,
        HttpMethod.PUT,
        path,
        { fieldManager },
        obj,
      );
      return asObject(json, 'update');
    },

    async delete(type, namespace, name, uid) {
      const body =
        uid === undefined
          ? undefined
          : { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid } };
      const { status } = await request(
        'delete',
        type.plural,
        HttpMethod.DELETE,
        resourcePath(type, namespace, name),
        {},
        body,
      );
      return status !== 404;
    },
  });
  return clientAs(options.fieldManager);
}
