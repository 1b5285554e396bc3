import { setTimeout as sleep } from 'node:timers/promises';
import type { PluginContext, VerbResult } from './plugin-context.js';
import { GatewayNotFound, readStatusSnapshot } from './status-read.js';
import { statusRows, type GatewayRow } from './status-rows.js';
import { appliedText, rolloutText, rowMessage } from './status-table.js';
import { EXIT_NOT_APPLIED, EXIT_NOT_FOUND, EXIT_OK } from './status.js';
import { humanDuration } from './human-duration.js';

// `kubectl meridio wait NAME --for=applied --timeout=5m`: reads the Gateway
// (a handful of gets a round) until its latest GatewayConfiguration is
// applied, or the deadline passes; then it says where the Gateway stands and
// the controller's own words for why.

export interface WaitArgs {
  name: string;
  timeoutMs: number;
  /** Between two reads. */
  intervalMs?: number;
  /** The clock the deadline is kept by; the real one unless a test gives another. */
  clock?: () => number;
}

export const WAIT_INTERVAL_MS = 2000;

const state = (r: GatewayRow): string => `APPLIED ${appliedText(r)}`;

export async function runWait(ctx: PluginContext, args: WaitArgs): Promise<VerbResult> {
  const clock = args.clock ?? Date.now;
  const start = clock();
  const deadline = start + args.timeoutMs;
  const namespace = ctx.namespace ?? 'default';
  const ref = `${namespace}/${args.name}`;
  for (;;) {
    let rows: GatewayRow[];
    try {
      rows = statusRows(await readStatusSnapshot(ctx.api, ctx.controllerName, [namespace], { requests: 0 }, args.name));
    } catch (err) {
      if (err instanceof GatewayNotFound) return { text: `Error: ${err.message}`, exitCode: EXIT_NOT_FOUND };
      throw err;
    }
    const row = rows[0];
    if (row === undefined) return { text: `Error: Gateway ${ref} is not a Gateway of ${ctx.controllerName}`, exitCode: EXIT_NOT_FOUND };
    if (row.applied.ok) return { text: `Gateway ${ref}: GatewayConfiguration ${row.configuration ?? '-'} generation ${row.applied.latest ?? row.applied.generation ?? '-'} applied`, exitCode: EXIT_OK };
    const left = deadline - clock();
    if (left <= 0) {
      const why = rowMessage(row);
      return {
        text: `Error: timed out after ${humanDuration(clock() - start)} waiting for Gateway ${ref} to have its latest configuration applied: ${state(row)}, ROLLOUT ${rolloutText(row.rollout)}${why ? `: ${why}` : ''}`,
        exitCode: EXIT_NOT_APPLIED,
      };
    }
    await sleep(Math.min(args.intervalMs ?? WAIT_INTERVAL_MS, left));
  }
}
