import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { z } from 'zod';
import { LABEL_MANAGED_BY as MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../api/names.js';
import { DEPLOYMENTS, GATEWAYS, GATEWAY_CLASSES, GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import type { Resource } from '../../api/watched-resources.js';
import { DeploymentSchema, GatewayClassSchema, GatewayConfigurationSchema, GatewaySchema } from '../../api/schemas.js';
import { renderStatusTable, type StatusSnapshot } from './status-table.js';

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

async function readSnapshot(api: CustomObjectsApi, controllerName: string, namespaces: string[]): Promise<StatusSnapshot> {
  const list = async <S extends z.ZodType>(ref: Resource, schema: S, opts: { clusterScoped?: boolean; labelSelector?: string } = {}): Promise<z.output<S>[]> => {
    const scopes: (string | undefined)[] = opts.clusterScoped || namespaces.length === 0 ? [undefined] : namespaces;
    const lists = await Promise.all(
      scopes.map(async (namespace) => {
        const params = { ...ref, ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}) };
        const raw = (namespace === undefined
          ? await api.listClusterCustomObject(params)
          : await api.listNamespacedCustomObject({ ...params, namespace })) as { items?: unknown[] };
        // One odd object must not blank the whole table: show what parses.
        return (raw.items ?? []).flatMap((item) => {
          const r = schema.safeParse(item);
          return r.success ? [r.data as z.output<S>] : [];
        });
      }),
    );
    return lists.flat();
  };
  const [gateways, classes, configurations, deployments] = await Promise.all([
    list(GATEWAYS, GatewaySchema),
    list(GATEWAY_CLASSES, GatewayClassSchema, { clusterScoped: true }),
    list(GATEWAY_CONFIGURATIONS, GatewayConfigurationSchema),
    list(DEPLOYMENTS, DeploymentSchema, { labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}` }),
  ]);
  return { controllerName, gateways, classes, configurations, deployments };
}

export function startStatusPrinter(opts: StatusPrinterOptions): StatusPrinter {
  const api = opts.kc.makeApiClient(CustomObjectsApi);
  const intervalMs = opts.intervalMs ?? 2000;
  const clock = opts.clock ?? (() => new Date());
  let last = '';
  let lastError = '';
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const tick = async (): Promise<void> => {
    try {
      const text = renderStatusTable(await readSnapshot(api, opts.controllerName, opts.namespaces));
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
