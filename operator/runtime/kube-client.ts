// The KubeClient port: the few API operations reconcilers, informers and leader election need.
// Two adapters: http-kube-client.ts (the real API server) and, for tests, test/harness/memory-kube-client.ts.
import type { KubeObject } from './kube-object.ts';
import type { ResourceType } from './resource-types.ts';

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  object: KubeObject;
}

export interface ListOptions {
  /** Undefined: every namespace. */
  namespace?: string;
  labelSelector?: string;
  /**
   * Metadata only (the API server's PartialObjectMetadata): for kinds whose contents a cache never
   * needs. A Secret or ConfigMap can weigh 1 MiB; its metadata a few hundred bytes.
   */
  metadataOnly?: boolean;
  /**
   * Objects for which this is false are dropped as each page of a list arrives, so that a list
   * never holds more than one page of objects the caller does not want.
   */
  keep?: (obj: KubeObject) => boolean;
}

export interface WatchOptions extends ListOptions {
  resourceVersion: string;
  /** The server closes the watch after this many seconds (client-go picks 5-10 min at random). */
  timeoutSeconds?: number;
}

export interface KubeClient {
  /** One object, or undefined when it does not exist. */
  get(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
  ): Promise<KubeObject | undefined>;
  list(type: ResourceType, options?: ListOptions): Promise<ListResult>;
  /**
   * Streams events until the server closes the watch (resolves) or it fails (rejects; a 410 is a
   * KubeApiError with status 410). Aborting the signal resolves it.
   */
  watch(
    type: ResourceType,
    options: WatchOptions,
    onEvent: (event: WatchEvent) => void,
    signal: AbortSignal,
  ): Promise<void>;
  /**
   * Server-side apply, force=true, with the client's field manager or `fieldManager` (a second
   * manager owns only what it applies: the sidecar added to a Deployment someone else manages);
   * `status` applies the status subresource.
   */
  apply(obj: KubeObject, subresource?: 'status', fieldManager?: string): Promise<KubeObject>;
  /** POST; a KubeApiError 409 when it exists already. */
  create(obj: KubeObject): Promise<KubeObject>;
  /** PUT with metadata.resourceVersion (optimistic concurrency); 409 on a stale version. */
  update(obj: KubeObject): Promise<KubeObject>;
  /**
   * The same client (connections, credentials, request rate) writing as another field manager by
   * default: one per controller, so that each owns exactly the fields it applies.
   */
  withFieldManager(fieldManager: string): KubeClient;
  /** DELETE; false when it was already gone. `uid` is a precondition. */
  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    uid?: string,
  ): Promise<boolean>;
}
