import { reconcileEvent } from '../../events/outgoing.js';
import { countBy, matches, WRITE_VERBS, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import type { ServiceAccountIdentity } from '../../tools/harness/service-account-identity.js';
import type { BenchCluster } from './cluster.js';
import type { FunctionProcess } from '../../tools/harness/function-process.js';

// What every measurement gets: the cluster, the controller identity, a
// GatewayClass of ours, and a logger for progress lines.

export interface BenchContext {
  cluster: BenchCluster;
  /** The controller's ServiceAccount, bound to the shipped ClusterRole. */
  identity: ServiceAccountIdentity;
  className: string;
  log(msg: string): void;
}

/** Requests one user sent, keyed `verb resource` (e.g. `get gateways`, `update gateways/status`). */
export type VerbCounts = Record<string, number>;

export interface RequestCounts {
  byVerb: VerbCounts;
  reads: number;
  writes: number;
  total: number;
  /**
   * Requests answered 409 Conflict (another writer, such as the Deployment
   * controller's status, came between a read and a write): each makes a
   * reconcile observe again, so its reads come once more.
   */
  conflicts: number;
}

/** Writes (create, update, patch, delete) to one resource, e.g. `deployments` or `gateways/status`. */
export function writesTo(c: RequestCounts, resource: string): number {
  let n = 0;
  for (const [key, v] of Object.entries(c.byVerb)) {
    const [verb, res] = key.split(' ');
    if (WRITE_VERBS.includes(verb ?? '') && res === resource) n += v;
  }
  return n;
}

export function requestCounts(events: AuditEvent[], user: string): RequestCounts {
  const byVerb: VerbCounts = {};
  const conflicts = events.filter((e) => matches(e, { user }) && e.responseStatus?.code === 409).length;
  for (const [key, n] of Object.entries(countBy(events, { user }))) {
    byVerb[key.slice(user.length + 1)] = n;
  }
  const sorted = Object.fromEntries(Object.entries(byVerb).sort(([a], [b]) => a.localeCompare(b)));
  let writes = 0;
  let total = 0;
  for (const [key, n] of Object.entries(sorted)) {
    total += n;
    if (WRITE_VERBS.includes(key.split(' ')[0] ?? '')) writes += n;
  }
  return { byVerb: sorted, reads: total - writes, writes, total, conflicts };
}

/** Posts one reconcile request for a Gateway and returns the round trip and the outcome the function logged. */
export async function reconcileVia(fn: FunctionProcess, key: { namespace: string; name: string }): Promise<{ status: number; ms: number; outcome: string }> {
  const ev = reconcileEvent(key);
  const r = await fn.post(ev);
  const line = await fn.handled(ev.id);
  return { ...r, outcome: line.outcome ?? '?' };
}

/** Reconciles until the function reports the Gateway in sync (at most `max` times). */
export async function settle(fn: FunctionProcess, key: { namespace: string; name: string }, max = 5): Promise<void> {
  for (let i = 0; i < max; i++) {
    if ((await reconcileVia(fn, key)).outcome === 'in-sync') return;
  }
  throw new Error(`${key.namespace}/${key.name} not in sync after ${max} reconciles`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function names(prefix: string, from: number, to: number): string[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => `${prefix}-${String(from + i).padStart(4, '0')}`);
}

/**
 * A fresh API server answers 429 "storage is (re)initializing" for a resource
 * until its watch cache is ready. The figures are about a running cluster, so
 * each resource the controller touches is read once through a throwaway
 * function process until a reconcile goes through.
 */
export async function warmUp(ctx: BenchContext, start: (namespace: string) => Promise<FunctionProcess>, prepare: (namespace: string) => Promise<void>, namespace: string): Promise<void> {
  await prepare(namespace);
  const fn = await start(namespace);
  try {
    const deadline = performance.now() + 60000;
    for (;;) {
      const r = await reconcileVia(fn, { namespace, name: 'warm-up' });
      if (r.status < 300 && (r.outcome === 'applied' || r.outcome === 'in-sync')) return;
      if (performance.now() > deadline) throw new Error(`warm-up reconcile still answers ${r.status} (${r.outcome})`);
      ctx.log(`warm-up: reconcile answered ${r.status} (${r.outcome}); the API server is still initializing`);
      await sleep(500);
    }
  } finally {
    await fn.stop();
  }
}
