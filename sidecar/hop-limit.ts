// Forwarding loops: a route whose upstream leads back to a Portcullis gateway on the way to itself
// (two routes naming each other's Service, say) would pass each request around until something
// gives. Every gateway counts itself in the Portcullis-Hops header it forwards; a request that
// arrives having passed MAX_HOPS gateways is answered 508 Loop Detected instead.
import type { Problem } from './problem.ts';
import { problemTypes } from './problem.ts';

export const HOPS_HEADER = 'portcullis-hops';
/** Gateways a request may pass; a real chain (edge gateway, team gateway) is two or three. */
export const MAX_HOPS = 8;

/** The hop count a request arrived with: a small non-negative integer, anything else counts as 0. */
export function parseHops(value: string): number {
  return /^\d{1,3}$/.test(value) ? Number(value) : 0;
}

export function hopLimitProblem(hops: number): Problem | undefined {
  if (hops < MAX_HOPS) return undefined;
  return {
    type: problemTypes.loopDetected,
    title: 'Loop Detected',
    status: 508,
    detail: `The request passed ${hops} Portcullis gateways (at most ${MAX_HOPS}): the route's upstream leads back to a gateway; check spec.upstream of the routes on the way.`,
  };
}
