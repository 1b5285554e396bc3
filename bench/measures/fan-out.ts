import { apiServerEvent } from '../../events/outgoing.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { createNamespace } from '../lib/cluster.js';
import { names, requestCounts, type BenchContext, type RequestCounts } from '../lib/context.js';
import { FunctionProcess, type Variant } from '../../tools/harness/function-process.js';
import { countApplied, createConfiguration, createGateways, editConfiguration, waitApplied, waitDeploymentsObserved } from '../lib/objects.js';
import { summarize, type Summary } from '../lib/stats.js';
import { load1 } from '../lib/machine.js';

// P4: one GatewayConfiguration shared by n Gateways, edited once. The edit
// reaches the function as the ApiServerSource Resource-mode update event would
// (events/outgoing.ts apiServerEvent, the new object as data); dispatch lists
// the namespace's Gateways and fans out reconcile requests, a batch of
// Gateways each, to K_SINK, which is the function itself. Converged = every Gateway shows
// Applied=True naming the new generation.

export interface P4Size {
  n: number;
  repeats: number;
  /** Update event posted → dispatch answered (every fanned-out reconcile answered). */
  dispatchMs: Summary;
  /** Update event posted → all n Gateways read back Applied=True with the new generation. */
  convergedMs: Summary;
  /** Requests of the last repeat, controller identity only. */
  counts: RequestCounts;
  requestsPerGateway: number;
  /** Reconcile invocation durations as the function logged them (ms, last repeat). */
  reconcileMs: Summary;
  outcomes: Record<string, number>;
  /** The 1-minute load average when each repeat converged, lowest–highest: how quiet the machine was. */
  load?: string;
}

export interface P4Result {
  sizes: P4Size[];
}

export async function measureFanOut(ctx: BenchContext, opts: { sizes: number[]; repeats: number; variant?: Variant }): Promise<P4Result> {
  const { cluster: c, identity } = ctx;
  const ns = await createNamespace(c, 'bench-p4');
  let cfg = await createConfiguration(c, ns, 'shared');
  const fn = await FunctionProcess.start({ ...(opts.variant ? { variant: opts.variant } : {}), kubeconfig: identity.kubeconfig, namespaces: [ns] });
  const source = c.info.server;
  const out: P4Size[] = [];
  let have = 0;
  try {
    for (const n of [...opts.sizes].sort((a, b) => a - b)) {
      ctx.log(`P4 n=${n}: creating ${n - have} Gateways`);
      await createGateways(c, ns, names('gw', have, n), ctx.className, 'shared');
      have = Math.max(have, n);
      const all = names('gw', 0, n);
      const set = new Set(all);
      // Bring the new Gateways up to the current generation first.
      const init = await fn.post(apiServerEvent('update', cfg, source));
      if (init.status >= 300) throw new Error(`dispatch answered ${init.status}`);
      await waitApplied(c, ns, all, cfg.metadata.generation ?? 1, 300000);
      await waitDeploymentsObserved(c, ns, n, 300000);
      const dispatch: number[] = [];
      const converged: number[] = [];
      const loads: number[] = [];
      let counts: RequestCounts | undefined;
      let reconcileMs: number[] = [];
      let outcomes: Record<string, number> = {};
      for (let r = 0; r < opts.repeats; r++) {
        cfg = await editConfiguration(c, ns, 'shared');
        const generation = cfg.metadata.generation ?? 0;
        fn.clearLogs();
        const window = await c.audit.begin();
        const t0 = performance.now();
        const res = await fn.post(apiServerEvent('update', cfg, source));
        const answered = performance.now() - t0;
        if (res.status >= 300) throw new Error(`dispatch answered ${res.status}`);
        // Every reconcile wrote before answering, and dispatch answered after
        // all of them: convergence is certain at `answered` when the first
        // read-back confirms it; otherwise the first read-back that does counts.
        let first = true;
        const done = await waitFor(`${n} Gateways applied with generation ${generation}`, async () => {
          const ok = (await countApplied(c, ns, set, generation)) === n;
          const at = first ? answered : performance.now() - t0;
          first = false;
          return ok ? at : undefined;
        }, { timeoutMs: 300000, intervalMs: 100 });
        const events = await window.end();
        dispatch.push(answered);
        converged.push(done);
        loads.push(load1());
        counts = requestCounts(events, identity.username);
        reconcileMs = [];
        outcomes = {};
        for (const l of fn.logs) {
          if (l.type !== 'org.nordix.meridio2.gateway.reconcile') continue;
          outcomes[l.outcome ?? '?'] = (outcomes[l.outcome ?? '?'] ?? 0) + 1;
          if (typeof l.durationMs === 'number') reconcileMs.push(l.durationMs);
        }
      }
      const last = counts as RequestCounts;
      out.push({ n, repeats: opts.repeats, dispatchMs: summarize(dispatch), convergedMs: summarize(converged), counts: last, requestsPerGateway: last.total / n, reconcileMs: summarize(reconcileMs), outcomes, load: `${Math.min(...loads)}–${Math.max(...loads)}` });
    }
  } finally {
    await fn.stop();
  }
  return { sizes: out };
}

