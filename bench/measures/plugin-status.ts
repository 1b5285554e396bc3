import { KUBECTL_MERIDIO_ENTRY, pluginReaderIdentity } from '../../tools/harness/kubectl-meridio.js';
import { createNamespace } from '../lib/cluster.js';
import { names, requestCounts, type BenchContext, type RequestCounts } from '../lib/context.js';
import { createConfiguration, createGateways } from '../lib/objects.js';
import { runNode } from '../lib/run-node.js';
import { summarize, type Summary } from '../lib/stats.js';
import type { Variant } from '../../tools/harness/function-process.js';
import { converge } from './resync.js';

// P9: `kubectl meridio status -A` over n Gateways in sync, each with its LB
// Deployment: the plugin's built entry as its own process, as an identity
// bound to the shipped read-only role (infra/rbac/plugin-reader-clusterrole.yaml),
// its requests by verb from the audit log. Lists are paged (500 a page), so
// the count grows by the page, not by the Gateway.

export interface P9Row {
  n: number;
  /** Gateway rows the table printed (every Gateway of our class, this one's and any other namespace's). */
  rows: number;
  counts: RequestCounts;
  /** 8 + 2 per 500 Gateways listed (every namespace's, so `rows`): their lists and their LB Deployments'. */
  allowance: number;
  /** The command, spawn to exit (informative: node's start is most of it at small n). */
  ms: Summary;
}

export interface P9Result {
  rows: P9Row[];
}

export async function measurePluginStatus(ctx: BenchContext, opts: { sizes: number[]; repeats: number; variant?: Variant }): Promise<P9Result> {
  const { cluster: c } = ctx;
  const ns = await createNamespace(c, 'bench-p9');
  await createConfiguration(c, ns, 'cfg');
  const reader = await pluginReaderIdentity(c.admin, ns);
  const out: P9Row[] = [];
  let have = 0;
  try {
    for (const n of [...opts.sizes].sort((a, b) => a - b)) {
      ctx.log(`P9 n=${n}: creating ${n - have} Gateways`);
      await createGateways(c, ns, names('gw', have, n), ctx.className, 'cfg', 16);
      have = Math.max(have, n);
      await converge(ctx, ns, n, opts.variant, 'P9');
      const times: number[] = [];
      let counts: RequestCounts | undefined;
      let rows = 0;
      for (let i = 0; i < opts.repeats; i++) {
        const window = await c.audit.begin();
        const t = performance.now();
        const stdout = await runNode([KUBECTL_MERIDIO_ENTRY, 'status', '-A'], { KUBECONFIG: reader.kubeconfig });
        times.push(performance.now() - t);
        counts = requestCounts(await window.end(), reader.username);
        // The health line, a blank line, the header, then one line per Gateway.
        rows = stdout.trimEnd().split('\n').length - 3;
      }
      if (!counts) throw new Error('P9: no repeat ran');
      out.push({ n, rows, counts, allowance: 8 + 2 * Math.ceil(rows / 500), ms: summarize(times) });
    }
  } finally {
    await reader.dispose();
  }
  return { rows: out };
}
