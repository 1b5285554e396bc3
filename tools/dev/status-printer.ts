import type { KubeConfig } from '@kubernetes/client-node';
import { kubeApi } from '../../functions/kube/kube-api.js';
import { readStatusSnapshot } from '../../cli/kubectl-meridio/status-read.js';
import { statusRows } from '../../cli/kubectl-meridio/status-rows.js';
import { renderStatusTable } from '../../cli/kubectl-meridio/status-table.js';

// The rows and the reads are the kubectl plugin's (`kubectl meridio status`).
// Re-reads the objects behind the status table on a short timer and prints the
// table only when its text changed, so that a quiet system prints nothing and
// the terminal shows the history of transitions rather than a flood.

export interface StatusPrinterOptions {
  kc: KubeConfig;
  controllerName: string;
  /** Namespaces shown; empty means all. */
  namespaces: string[];
  /** Receives each changed table, already headed by a `--- <time> ---` line. */
  write(text: string): void;
  warn(obj: object, msg: string): void;
  intervalMs?: number;
  clock?: () => Date;
}

export interface StatusPrinter {
  stop(): Promise<void>;
}

export function startStatusPrinter(opts: StatusPrinterOptions): StatusPrinter {
  const api = kubeApi(opts.kc);
  const intervalMs = opts.intervalMs ?? 2000;
  const clock = opts.clock ?? (() => new Date());
  let last = '';
  let lastError = '';
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const tick = async (): Promise<void> => {
    try {
      const snapshot = await readStatusSnapshot(api, opts.controllerName, opts.namespaces.length === 0 ? undefined : opts.namespaces, { requests: 0 });
      const rows = statusRows(snapshot);
      // The plugin's table without AGE, which would change the text every tick.
      const text = rows.length === 0 ? `(no Gateway of a GatewayClass with controllerName ${opts.controllerName})` : renderStatusTable(rows, { allNamespaces: true, wide: false });
      lastError = '';
      if (text !== last && !stopped) {
        last = text;
        opts.write(`--- ${clock().toISOString()} ---\n${text}\n`);
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      // The same failure every 2 s is one log line, not one per tick.
      if (message !== lastError) opts.warn({ err: message }, 'status table: reading the cluster failed');
      lastError = message;
    }
  };

  // A timeout chain rather than an interval: a slow read never overlaps the next.
  const schedule = (): void => {
    if (stopped) return;
    running = tick().finally(() => {
      if (!stopped) timer = setTimeout(schedule, intervalMs);
    });
  };
  schedule();

  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
