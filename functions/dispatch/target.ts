import type { Named } from '../../events/incoming.js';

// The types dispatch, the resync and fan-out share; a leaf, so that none of
// them imports another for a type.

/** Whose objects the function serves. */
export interface DispatchScope {
  controllerName: string;
  /** Namespaces served; empty means all. */
  namespaces: string[];
  /** LB_ROLLOUT_BUDGET and the template's hash: a settled LB rollout wakes the next in line. */
  rollout?: { budget: number; templateHash: string };
}

/** A Gateway to reconcile, with what dispatch already knows of what it names (observe-hint.ts): what a reconcile request names. */
export type Target = Named;
