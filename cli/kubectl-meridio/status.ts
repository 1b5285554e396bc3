import { dump } from 'js-yaml';
import type { RequestCount } from '../../functions/dispatch/resync-inputs.js';
import { controllerHealth, healthLine, type HealthReport } from './controller-health.js';
import { readHealth } from './controller-health-read.js';
import type { PluginContext, VerbResult } from './plugin-context.js';
import { GatewayNotFound, readStatusSnapshot } from './status-read.js';
import { statusRows, type GatewayRow } from './status-rows.js';
import { ageText, renderStatusTable } from './status-table.js';

// `kubectl meridio status [NAME]`: the controller's health line, then one
// row per Gateway of this controller in the scope.

export const EXIT_OK = 0;
/** --exit-code: a selected Gateway's latest configuration is not applied; wait: timed out. */
export const EXIT_NOT_APPLIED = 1;
export const EXIT_USAGE = 2;
/** The Gateway is not found or not this controller's, or the cluster cannot be read. */
export const EXIT_NOT_FOUND = 3;

export interface StatusArgs {
  name?: string | undefined;
  exitCode: boolean;
  controllerNamespace: string;
  /** Counts the API requests made (the bench reads it). */
  count?: RequestCount;
}

export interface StatusDocument {
  controller: HealthReport;
  gateways: (GatewayRow & { age: string })[];
}

const where = (ctx: PluginContext): string => (ctx.namespace === undefined ? 'in any namespace' : `in namespace ${ctx.namespace}`);

export async function runStatus(ctx: PluginContext, args: StatusArgs): Promise<VerbResult> {
  const count = args.count ?? { requests: 0 };
  const scope = ctx.namespace === undefined ? undefined : [ctx.namespace];
  let read;
  try {
    read = await Promise.all([readStatusSnapshot(ctx.api, ctx.controllerName, scope, count, args.name), readHealth(ctx.api, args.controllerNamespace, count)]);
  } catch (err) {
    if (err instanceof GatewayNotFound) return { text: `Error: ${err.message}`, exitCode: EXIT_NOT_FOUND };
    throw err;
  }
  const [snapshot, healthRead] = read;
  const health = controllerHealth(healthRead, ctx.now);
  const rows = statusRows(snapshot);
  const notApplied = rows.some((r) => !r.applied.ok);
  const exitCode = args.exitCode && notApplied ? EXIT_NOT_APPLIED : EXIT_OK;
  if (args.name !== undefined && rows.length === 0) {
    const gw = snapshot.gateways[0];
    const cls = snapshot.classes.find((c) => c.metadata.name === gw?.spec.gatewayClassName);
    const whose = cls === undefined ? 'which does not exist' : `whose controllerName is ${cls.spec.controllerName}`;
    return { text: `Error: Gateway ${ctx.namespace ?? ''}/${args.name} is not a Gateway of ${ctx.controllerName}: its GatewayClass is ${gw?.spec.gatewayClassName ?? '?'}, ${whose}`, exitCode: EXIT_NOT_FOUND };
  }
  if (ctx.output === 'json' || ctx.output === 'yaml') {
    const doc: StatusDocument = { controller: health, gateways: rows.map((r) => ({ ...r, age: ageText(r.since, ctx.now) })) };
    return { text: ctx.output === 'json' ? JSON.stringify(doc, null, 2) : dump(doc, { lineWidth: -1 }).trimEnd(), exitCode };
  }
  const table = rows.length === 0
    ? `No Gateways of a GatewayClass with controllerName ${ctx.controllerName} ${where(ctx)}.`
    : renderStatusTable(rows, { allNamespaces: ctx.namespace === undefined, wide: ctx.output === 'wide', now: ctx.now });
  return { text: `${healthLine(health)}\n\n${table}`, exitCode };
}
