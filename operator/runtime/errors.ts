// Typed errors of the operator with stable codes, so callers branch on a code, never on a message.

/** A non-2xx answer of the Kubernetes API server; `status` is the HTTP status, `reason` the Status reason. */
export class KubeApiError extends Error {
  readonly code = 'ERR_KUBE_API';
  readonly status: number;
  readonly reason: string | undefined;
  /** The kinds of the Status's details.causes (their `reason` field, e.g. NamespaceTerminating). */
  readonly causes: readonly string[];
  constructor(status: number, message: string, reason?: string, causes: readonly string[] = []) {
    super(message);
    this.name = 'KubeApiError';
    this.status = status;
    this.reason = reason;
    this.causes = causes;
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 404;
}

export function isConflict(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 409;
}

/** 410 Gone: the resourceVersion a watch asked for is too old; the informer must relist. */
export function isGone(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 410;
}

/**
 * 429 Too Many Requests: the API server asks the client to come back later (its storage for a
 * kind is still initializing, as right after a CRD is created, or API Priority and Fairness is
 * shedding load). Expected now and then; worth a warning only when it persists.
 */
export function isThrottled(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 429;
}

/**
 * 403 because the object's namespace is being deleted: nothing can be created or changed there
 * any more, and the namespace takes the object with it. Nothing to retry and nothing to warn about.
 */
export function isNamespaceTerminating(err: unknown): boolean {
  if (!(err instanceof KubeApiError)) return false;
  // Being deleted (403 NamespaceTerminating), or already gone (404 naming the namespace itself).
  return (
    (err.status === 403 && err.causes.includes('NamespaceTerminating')) ||
    (err.status === 404 && /namespaces "[^"]+" not found/.test(err.message))
  );
}

/** A custom resource's spec does not pass the operator's own schema (the CRD let it through). */
export class InvalidSpecError extends Error {
  readonly code = 'ERR_INVALID_SPEC';
  constructor(message: string) {
    super(message);
    this.name = 'InvalidSpecError';
  }
}
