import { humanDuration } from './human-duration.js';
import type { ConditionCell, GatewayRow, RolloutCell } from './status-rows.js';

// The rows of status-rows.ts as text: kubectl's layout (NAMESPACE only over
// every namespace, fixed-width columns two spaces apart, no trailing blanks)
// and its `-o wide` (more columns to the right). One cell per value, so that
// `awk` and the tests can split on blanks... except ROLLOUT's "queued #n",
// which is what the issue asked operators to read.

/** Shown where there is nothing to show (no condition yet, no Deployment, no parametersRef). */
export const NONE = '-';
export const APPLIED_MARK = '✓';

export interface TableOptions {
  allNamespaces: boolean;
  wide: boolean;
  /** AGE is relative to this; absent: no AGE column (npm start's live table prints only on change). */
  now?: Date;
}

export function conditionText(c: ConditionCell | null): string {
  if (c === null) return NONE;
  return c.status === 'True' ? 'True' : `${c.status}/${c.reason}`;
}

export function appliedText(row: GatewayRow): string {
  const { generation, latest, ok, reason } = row.applied;
  return `${generation ?? NONE}/${latest ?? NONE} ${ok ? APPLIED_MARK : (reason ?? NONE)}`;
}

export function rolloutText(r: RolloutCell): string {
  if (r.state === 'none') return NONE;
  return r.state === 'queued' ? `queued #${r.position}` : r.state;
}

/** The message that says why the row is not all well: the first condition not True, or the Applied one. */
export function rowMessage(row: GatewayRow): string {
  if (row.accepted !== null && row.accepted.status !== 'True') return row.accepted.message;
  if (row.programmed !== null && row.programmed.status !== 'True') return row.programmed.message;
  return row.applied.message;
}

export function ageText(since: string | null, now: Date): string {
  if (since === null) return NONE;
  const t = Date.parse(since);
  return Number.isNaN(t) ? NONE : humanDuration(now.getTime() - t);
}

/** Columns of text, each as wide as its widest cell, two spaces apart. */
export function alignColumns(lines: string[][]): string {
  const widths: number[] = [];
  for (const cells of lines) cells.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, [...c].length)));
  return lines.map((cells) => cells.map((c, i) => c + ' '.repeat((widths[i] ?? 0) - [...c].length)).join('  ').trimEnd()).join('\n');
}

export function renderStatusTable(rows: GatewayRow[], opts: TableOptions): string {
  const header = [
    ...(opts.allNamespaces ? ['NAMESPACE'] : []),
    'NAME', 'ACCEPTED', 'PROGRAMMED', 'APPLIED', 'LB', 'ROLLOUT',
    ...(opts.now ? ['AGE'] : []),
    ...(opts.wide ? ['CLASS', 'CONFIGURATION', 'MESSAGE'] : []),
  ];
  const lines = rows.map((r) => [
    ...(opts.allNamespaces ? [r.namespace] : []),
    r.name,
    conditionText(r.accepted),
    conditionText(r.programmed),
    appliedText(r),
    r.lb === null ? NONE : `${r.lb.available}/${r.lb.desired}`,
    rolloutText(r.rollout),
    ...(opts.now ? [ageText(r.since, opts.now)] : []),
    ...(opts.wide ? [r.gatewayClass, r.configuration ?? NONE, rowMessage(r) || NONE] : []),
  ]);
  return alignColumns([header, ...lines]);
}
