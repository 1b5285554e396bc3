// The only differences allowed between the function and the recorded
// Meridio-2 output (test/oracle/meridio2/). Each is a documented choice
// (docs/operations.md, "Differences from Meridio-2"); anything else fails the
// differential tests. Keep this list short: a new entry is a new difference
// an operator will see.
import type { Difference } from './compare.js';

type Json = Record<string, unknown>;

export type Mode = 'planner' | 'server';

export interface AllowedDifference {
  id: string;
  reason: string;
  /** Where it may occur (JSON Pointer into a step; conditions by type). */
  path: RegExp;
  /** What it must look like; `ours` and `theirs` are the whole steps. */
  when: (d: Difference, steps: { ours: Json; theirs: Json }) => boolean;
  /** Only in one of the two differential tests. */
  only?: Mode;
}

const condition = (step: Json, type: string): Json | undefined =>
  (((step.gateway as Json | undefined)?.status as Json | undefined)?.conditions as Json | undefined)?.[type] as Json | undefined;

export const ALLOWED_DIFFERENCES: AllowedDifference[] = [
  {
    id: 'applied-record',
    reason: 'The record of the applied inputs on the Deployment (docs/design.md §6): what this controller adds to fix Meridio-2\'s silent write failures. Metadata only: no Pod changes.',
    path: /^\/deployment\/metadata\/annotations\/meridio-2\.nordix\.org~1(applied-gatewayconfiguration-(name|uid|generation)|applied-gateway-generation|template-hash)$/,
    when: (d) => d.theirs === undefined && typeof d.ours === 'string',
  },
  {
    id: 'extra-conditions',
    reason: 'Our own condition types, GatewayConfigurationApplied and LoadBalancerAvailable; Meridio-2 writes only Accepted and Programmed.',
    path: /^\/gateway\/status\/conditions\/meridio-2\.nordix\.org~1(GatewayConfigurationApplied|LoadBalancerAvailable)$/,
    when: (d) => d.theirs === undefined,
  },
  {
    id: 'listener-status',
    reason: 'status.listeners, which the Gateway API asks for; Meridio-2 writes none.',
    path: /^\/gateway\/status\/listeners$/,
    when: (d) => d.theirs === undefined && Array.isArray(d.ours),
  },
  {
    id: 'empty-addresses',
    reason: 'With no L34Route, status.addresses is written as an empty list; Meridio-2 leaves the field out. Same meaning.',
    path: /^\/gateway\/status\/addresses$/,
    when: (d) => d.theirs === undefined && Array.isArray(d.ours) && d.ours.length === 0,
  },
  {
    id: 'programmed-message',
    reason: 'Programmed=True names the Deployment and the applied GatewayConfiguration generation instead of "LB Deployment reconciled".',
    path: /^\/gateway\/status\/conditions\/Programmed\/message$/,
    when: (d, { ours }) => d.theirs === 'LB Deployment reconciled' && condition(ours, 'Programmed')?.status === 'True' && /^Deployment \S+ is programmed with GatewayConfiguration /.test(String(d.ours)),
  },
  {
    id: 'invalid-parameters-message',
    reason: 'Accepted=False/InvalidParameters says what is wrong in our words (namespace/name of the GatewayConfiguration, the offending list index); the reason is the same.',
    path: /^\/gateway\/status\/conditions\/Accepted\/message$/,
    when: (_d, { ours, theirs }) => condition(ours, 'Accepted')?.reason === 'InvalidParameters' && condition(theirs, 'Accepted')?.reason === 'InvalidParameters',
  },
  {
    id: 'programmed-when-not-accepted',
    reason: 'A new Gateway that is not accepted gets Programmed=False/Invalid ("No LB Deployment is programmed"); Meridio-2 leaves the CRD default Unknown/Pending.',
    path: /^\/gateway\/status\/conditions\/Programmed\/(status|reason|message|observedGeneration)$/,
    when: (_d, { ours, theirs }) => condition(ours, 'Programmed')?.reason === 'Invalid' && condition(theirs, 'Programmed')?.reason === 'Pending' && condition(ours, 'Accepted')?.status === 'False',
  },
  {
    id: 'revision-annotation',
    reason: 'deployment.kubernetes.io/revision is written by kube-controller-manager, which the planner test does not have (the API server test does).',
    path: /^\/deployment\/metadata\/annotations\/deployment\.kubernetes\.io~1revision$/,
    when: (d) => d.ours === undefined,
    only: 'planner',
  },
];

/** The differences no entry explains, and the ids of the entries that were used. */
export function unexplained(found: Difference[], steps: { ours: Json; theirs: Json }, mode: Mode): { left: Difference[]; used: string[] } {
  const used = new Set<string>();
  const left = found.filter((d) => {
    const entry = ALLOWED_DIFFERENCES.find((a) => (a.only === undefined || a.only === mode) && a.path.test(d.path) && a.when(d, steps));
    if (entry) used.add(entry.id);
    return entry === undefined;
  });
  return { left, used: [...used] };
}
