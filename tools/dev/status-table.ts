import { APPLIED_CONFIGURATION_GENERATION } from '../../api/names.js';
import { findCondition } from '../../functions/reconcile/plan/conditions.js';
import { CONDITION_ACCEPTED, CONDITION_APPLIED, CONDITION_PROGRAMMED } from '../../api/names.js';
import { deploymentName } from '../../functions/reconcile/plan/names.js';
import type { Deployment, Gateway, GatewayClass, GatewayConfiguration } from '../../api/schemas.js';

// The live table `npm start` prints: one row per Gateway of our classes, with
// what the controller reported (conditions) next to what it actually did (the
// applied generation recorded on the Deployment) and what it should converge
// to (the GatewayConfiguration's current generation). Pure, so that the same
// snapshot always renders the same text and the printer can print on change.

export interface StatusSnapshot {
  controllerName: string;
  gateways: Gateway[];
  classes: GatewayClass[];
  configurations: GatewayConfiguration[];
  deployments: Deployment[];
}

export interface StatusRow {
  gateway: string;
  accepted: string;
  programmed: string;
  applied: string;
  appliedGeneration: string;
  latestGeneration: string;
  available: string;
}

const HEADER: StatusRow = {
  gateway: 'GATEWAY',
  accepted: 'ACCEPTED',
  programmed: 'PROGRAMMED',
  applied: 'APPLIED',
  appliedGeneration: 'APPLIED-GEN',
  latestGeneration: 'LATEST-GEN',
  available: 'AVAILABLE',
};

const COLUMNS = Object.keys(HEADER) as (keyof StatusRow)[];

/** Shown where there is nothing to show (no condition yet, no Deployment, no parametersRef). */
const NONE = '-';

const nsName = (meta: { namespace?: string; name: string }): string => `${meta.namespace ?? ''}/${meta.name}`;

function conditionText(gw: Gateway, type: string, withReason: boolean): string {
  const c = findCondition(gw.status?.conditions ?? [], type);
  if (!c) return NONE;
  return withReason ? `${c.status}/${c.reason}` : c.status;
}

function latestGeneration(gw: Gateway, configurations: Map<string, GatewayConfiguration>): string {
  const ref = gw.spec.infrastructure?.parametersRef;
  if (!ref || ref.kind !== 'GatewayConfiguration' || ref.group !== 'meridio-2.nordix.org') return NONE;
  const cfg = configurations.get(nsName({ namespace: gw.metadata.namespace, name: ref.name }));
  // A reference to a configuration that does not exist is worth seeing as such.
  return cfg ? String(cfg.metadata.generation ?? 0) : 'missing';
}

function available(d: Deployment | undefined): string {
  if (!d) return NONE;
  // An unset spec.replicas means 1 to the deployment controller.
  return `${d.status?.availableReplicas ?? 0}/${d.spec.replicas ?? 1}`;
}

export function statusRows(s: StatusSnapshot): StatusRow[] {
  const ours = new Set(s.classes.filter((c) => c.spec.controllerName === s.controllerName).map((c) => c.metadata.name));
  const configurations = new Map(s.configurations.map((c) => [nsName(c.metadata), c]));
  const deployments = new Map(s.deployments.map((d) => [nsName(d.metadata), d]));
  return s.gateways
    .filter((gw) => ours.has(gw.spec.gatewayClassName))
    .map((gw): StatusRow => {
      const d = deployments.get(nsName({ namespace: gw.metadata.namespace, name: deploymentName(gw.metadata.name) }));
      return {
        gateway: nsName(gw.metadata),
        accepted: conditionText(gw, CONDITION_ACCEPTED, false),
        programmed: conditionText(gw, CONDITION_PROGRAMMED, false),
        applied: conditionText(gw, CONDITION_APPLIED, true),
        appliedGeneration: d?.metadata.annotations?.[APPLIED_CONFIGURATION_GENERATION] ?? NONE,
        latestGeneration: latestGeneration(gw, configurations),
        available: available(d),
      };
    })
    .sort((a, b) => (a.gateway < b.gateway ? -1 : a.gateway > b.gateway ? 1 : 0));
}

/** Fixed-width columns separated by two spaces, header first; no trailing blanks. */
export function renderStatusTable(s: StatusSnapshot): string {
  const rows = statusRows(s);
  if (rows.length === 0) return `(no Gateway of a GatewayClass with controllerName ${s.controllerName})`;
  const all = [HEADER, ...rows];
  const widths = COLUMNS.map((col) => Math.max(...all.map((r) => r[col].length)));
  return all
    .map((r) => COLUMNS.map((col, i) => r[col].padEnd(widths[i] ?? 0)).join('  ').trimEnd())
    .join('\n');
}
