import { existsSync } from 'node:fs';
import { pingEvent, reconcileEvent } from '../../events/outgoing.js';
import { createNamespace } from '../lib/cluster.js';
import { names, reconcileVia, sleep, type BenchContext } from '../lib/context.js';
import { FunctionProcess, type Variant } from '../../tools/harness/function-process.js';
import { createConfiguration, createGateways, editConfiguration, waitApplied } from '../lib/objects.js';
import { summarize, type Summary } from '../lib/stats.js';

// P5: memory of the function process, read from /proc/<pid>/status.
// - idle: VmRSS 2 s after /readyz first answered 200, before any event;
// - peak: VmHWM (the high-water mark of the resident set over the process's
//   life) after `concurrency` reconcile requests posted at once, one per
//   Gateway, each of which must write (the shared GatewayConfiguration was
//   edited just before), on a fresh process;
// - after: VmRSS 2 s after the burst.

export interface P5Variant {
  variant: string;
  repeats: number;
  idleMb: Summary;
  peakMb: Summary;
  afterMb: Summary;
  /** Burst: posted → last answer (ms). */
  burstMs: Summary;
  outcomes: Record<string, number>;
}

export interface P5Result {
  concurrency: number;
  variants: P5Variant[];
}

export async function measureMemory(ctx: BenchContext, opts: { concurrency: number; repeats: number; variants: Variant[] }): Promise<P5Result> {
  const { cluster: c, identity } = ctx;
  const ns = await createNamespace(c, 'bench-p5');
  await createConfiguration(c, ns, 'cfg');
  const gws = names('gw', 0, opts.concurrency);
  await createGateways(c, ns, gws, ctx.className, 'cfg');
  // A helper process creates the Deployments, so that every measured
  // process starts from the same state.
  const helper = await FunctionProcess.start({ kubeconfig: identity.kubeconfig, namespaces: [ns] });
  try {
    await helper.post(pingEvent());
    await waitApplied(c, ns, gws, 1, 300000);
  } finally {
    await helper.stop();
  }
  // A compile cache not primed by P1 is primed here, like an image build would.
  for (const variant of opts.variants) {
    const dir = variant.env.NODE_COMPILE_CACHE;
    if (dir === undefined || existsSync(dir)) continue;
    const fn = await FunctionProcess.start({ variant, kubeconfig: identity.kubeconfig, namespaces: [ns] });
    try {
      await reconcileVia(fn, { namespace: ns, name: gws[0] as string });
    } finally {
      await fn.stop();
    }
  }
  const rows: P5Variant[] = [];
  const acc = new Map<string, { idle: number[]; peak: number[]; after: number[]; burst: number[]; outcomes: Record<string, number> }>();
  for (let r = 0; r < opts.repeats; r++) {
    for (const variant of opts.variants) {
      ctx.log(`P5 ${variant.name} repeat ${r + 1}/${opts.repeats}`);
      const a = acc.get(variant.name) ?? { idle: [], peak: [], after: [], burst: [], outcomes: {} };
      acc.set(variant.name, a);
      await editConfiguration(c, ns, 'cfg');
      const fn = await FunctionProcess.start({ variant, kubeconfig: identity.kubeconfig, namespaces: [ns] });
      try {
        await sleep(2000);
        a.idle.push(fn.memory().rssKb / 1024);
        const events = gws.map((name) => reconcileEvent({ namespace: ns, name }));
        const t0 = performance.now();
        const results = await Promise.all(events.map((ev) => fn.post(ev)));
        a.burst.push(performance.now() - t0);
        const bad = results.filter((x) => x.status >= 300).length;
        if (bad > 0) a.outcomes[`http>=300`] = (a.outcomes['http>=300'] ?? 0) + bad;
        a.peak.push(fn.memory().hwmKb / 1024);
        for (const ev of events) {
          const o = (await fn.handled(ev.id)).outcome ?? '?';
          a.outcomes[o] = (a.outcomes[o] ?? 0) + 1;
        }
        await sleep(2000);
        a.after.push(fn.memory().rssKb / 1024);
      } finally {
        await fn.stop();
      }
    }
  }
  for (const variant of opts.variants) {
    const a = acc.get(variant.name);
    if (!a) continue;
    rows.push({ variant: variant.name, repeats: a.idle.length, idleMb: summarize(a.idle), peakMb: summarize(a.peak), afterMb: summarize(a.after), burstMs: summarize(a.burst), outcomes: a.outcomes });
  }
  return { concurrency: opts.concurrency, variants: rows };
}
