// What the RateLimitPolicy reconciler reads live of the Gateway API (its CRDs may not be
// installed, so no informer waits on them): a kind's objects in a namespace, and whether the
// installed HTTPRoute CRD has the ExternalAuth filter (asked once a minute at most).
import { crdHasExternalAuth } from '../policies/external-auth-filter.ts';
import type { Clock } from '../runtime/clock.ts';
import { isNotFound } from '../runtime/errors.ts';
import type { KubeClient } from '../runtime/kube-client.ts';
import type { KubeObject } from '../runtime/kube-object.ts';
import { resourceTypes, type ResourceType } from '../runtime/resource-types.ts';

/** How long the answer "the HTTPRoute CRD has ExternalAuth" is reused (ms): one GET per minute at most. */
const CRD_CHECK_TTL_MS = 60_000;
const HTTP_ROUTE_CRD = 'httproutes.gateway.networking.k8s.io';

/** The objects of a namespace, live; undefined when the kind is not installed. */
export async function listIfInstalled(
  client: KubeClient,
  type: ResourceType,
  ns: string,
): Promise<KubeObject[] | undefined> {
  try {
    return (await client.list(type, { namespace: ns })).items;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Whether the installed HTTPRoute CRD has the ExternalAuth filter, the answer reused for CRD_CHECK_TTL_MS. */
export class ExternalAuthCheck {
  readonly #client: KubeClient;
  readonly #clock: Clock;
  #crdCheck: { value: boolean; atMs: number } | undefined;

  constructor(client: KubeClient, clock: Clock) {
    this.#client = client;
    this.#clock = clock;
  }

  async has(): Promise<boolean> {
    const now = this.#clock.now();
    if (this.#crdCheck !== undefined && now - this.#crdCheck.atMs < CRD_CHECK_TTL_MS)
      return this.#crdCheck.value;
    const crd = await this.#client.get(
      resourceTypes.customResourceDefinition,
      undefined,
      HTTP_ROUTE_CRD,
    );
    this.#crdCheck = { value: crdHasExternalAuth(crd), atMs: now };
    return this.#crdCheck.value;
  }
}
