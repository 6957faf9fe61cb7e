// The sidecar container's environment, derived from its memory limit (ADR 0008). V8 would
// otherwise size its heap from the container's memory limit (1 MiB semi-spaces for 256 MiB:
// frequent scavenges, ~60 % more CPU per request in `make bench`) or, without a limit, from the
// node's memory (hundreds of MiB under load). These caps were chosen by measurement
// (docs/reference/performance.md, the optimisations table): 8 MiB semi-spaces, so that a request's short-lived objects die
// young without the young generation growing to 64 MiB; the old generation capped at half the
// limit (the sidecar's live heap is ~15-25 MiB; without a cap V8 grows it against a multi-GiB
// limit); and glibc held to two malloc arenas (V8's background threads otherwise each grow their own).
import { type ContainerResources, quantityOf } from './container-resources.ts';

const MiB = 1024 * 1024;
/** The sidecar container's default memory limit, MiB. */
export const SIDECAR_MEMORY_LIMIT_MIB = 256;
/**
 * Smallest memory limit the operator renders for a sidecar, MiB: below it the 8 MiB semi-spaces,
 * the ~15-25 MiB live heap and node's own ~50 MiB of executable pages no longer fit.
 */
export const SIDECAR_MIN_MEMORY_LIMIT_MIB = 96;
/** Young-generation semi-space, MiB (ADR 0008: 8 measured against 1 and 4). */
export const SIDECAR_SEMI_SPACE_MIB = 8;

/** V8 old-space cap, MiB: half the container's memory limit; without a limit, half of `defaultLimitMiB`. */
export function oldSpaceMiB(resources: ContainerResources, defaultLimitMiB: number): number {
  const limit = resources.limits?.['memory'];
  const bytes = limit === undefined ? undefined : quantityOf(limit);
  return Math.floor((bytes ?? defaultLimitMiB * MiB) / 2 / MiB);
}

/** The sidecar's V8 old-space cap, MiB: half its memory limit; without a limit, half the default limit. */
export function sidecarOldSpaceMiB(resources: ContainerResources): number {
  return oldSpaceMiB(resources, SIDECAR_MEMORY_LIMIT_MIB);
}

/** A Node container's environment: production mode, the V8 caps, two malloc arenas. */
export function nodeEnv(
  semiSpaceMiB: number,
  oldSpace: number,
): { NODE_ENV: string; NODE_OPTIONS: string; MALLOC_ARENA_MAX: string } {
  return {
    NODE_ENV: 'production',
    NODE_OPTIONS: `--max-semi-space-size=${semiSpaceMiB} --max-old-space-size=${oldSpace}`,
    MALLOC_ARENA_MAX: '2',
  };
}

/** The sidecar's memory limit is too small to run it (undefined: fine, or no limit). */
export function sidecarMemoryProblem(resources: ContainerResources): string | undefined {
  const limit = resources.limits?.['memory'];
  const bytes = limit === undefined ? undefined : quantityOf(limit);
  if (bytes === undefined || bytes >= SIDECAR_MIN_MEMORY_LIMIT_MIB * MiB) return undefined;
  return `the sidecar's limits.memory (${limit}) is below ${SIDECAR_MIN_MEMORY_LIMIT_MIB}Mi, too little for node and its heap; give it at least ${SIDECAR_MIN_MEMORY_LIMIT_MIB}Mi (256Mi by default)`;
}

export function sidecarEnv(resources: ContainerResources): {
  NODE_ENV: string;
  NODE_OPTIONS: string;
  MALLOC_ARENA_MAX: string;
} {
  return nodeEnv(SIDECAR_SEMI_SPACE_MIB, sidecarOldSpaceMiB(resources));
}

/** The sidecar's default resources (Helm value routes.sidecarResources). */
export const DEFAULT_SIDECAR_RESOURCES: ContainerResources = {
  requests: { cpu: '50m', memory: '64Mi' },
  limits: { memory: `${SIDECAR_MEMORY_LIMIT_MIB}Mi` },
};

/** The environment of a sidecar with the default resources: the one source for the soak and the benchmark. */
export const SIDECAR_ENV = sidecarEnv(DEFAULT_SIDECAR_RESOURCES);
