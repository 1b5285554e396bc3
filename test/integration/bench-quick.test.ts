import { existsSync } from 'node:fs';
import { connect } from '../../bench/lib/cluster.js';
import { writesTo, type BenchContext } from '../../bench/lib/context.js';
import { setUp, tearDown } from '../../bench/lib/setup.js';
import { measureRequests } from '../../bench/measures/requests.js';
import { measureResync } from '../../bench/measures/resync.js';
import { measurePluginStatus } from '../../bench/measures/plugin-status.js';
import { measureDrain } from '../../bench/measures/drain.js';
import { clusterInfo } from '../support/cluster.js';

// The benchmark's quick mode in the suite: only the COUNT figures, which are
// exact (audit log), never the times, which a shared machine makes noisy.
// It runs the shipped startup snapshot (dist/function.blob, built by `npm test`)
// as a real process, as the controller ServiceAccount, on the shared control
// plane (kube-controller-manager runs there).

describe('bench quick mode: request counts', () => {
  let ctx: BenchContext | undefined;
  const log = (msg: string): void => {
    if (process.env.BENCH_VERBOSE) process.stderr.write(`[bench] ${msg}\n`);
  };

  beforeAll(async () => {
    if (!existsSync('dist/function.blob')) throw new Error('dist/function.blob is missing: run `npm test` (it builds first) or `npm run build:bundle`');
    ctx = await setUp(connect(clusterInfo(), { controllerManager: true }), log);
  }, 120000);

  afterAll(async () => {
    if (ctx) await tearDown(ctx, { namespaces: true });
  });

  it('P3: a no-op reconcile writes nothing; a configuration change is one Deployment update and one status update', async () => {
    const { rows } = await measureRequests(ctx as BenchContext, { repeats: 1 });
    const row = (scenario: string) => {
      const r = rows.find((x) => x.scenario === scenario);
      if (!r) throw new Error(`no P3 row for ${scenario}`);
      return r;
    };
    const noop = row('no-op');
    expect(noop.outcome).toBe('in-sync');
    expect(noop.counts.writes).toBe(0);
    expect(noop.counts.reads).toBeGreaterThan(0);

    // The same under MutatingAdmissionPolicies that rewrite the LB images.
    const mutated = row('no-op under mutating admission');
    expect(mutated.outcome).toBe('in-sync');
    expect(mutated.counts.writes).toBe(0);

    // One Deployment update and one status update, each an update (no patch,
    // no create). A write answered 409 (the Deployment controller's status
    // came between the read and the write) is observed again and sent once
    // more: one more write per conflict, and no other.
    const change = row('configuration change');
    expect(change.outcome).toBe('applied');
    const deployments = change.counts.byVerb['update deployments'] ?? 0;
    const statuses = change.counts.byVerb['update gateways/status'] ?? 0;
    // Besides them, the one Event that records the change (Normal GatewayConfigurationApplied).
    expect({ deployments: writesTo(change.counts, 'deployments'), statuses: writesTo(change.counts, 'gateways/status'), events: writesTo(change.counts, 'events') }).toEqual({ deployments, statuses, events: 1 });
    expect(deployments + statuses).toBe(2 + change.counts.conflicts);
    expect(Math.min(deployments, statuses)).toBeGreaterThanOrEqual(1);

    // A verdict observed again writes nothing either.
    expect(row('collision (repeat)').counts.writes).toBe(0);
    expect(row('validation failure (repeat)').counts.writes).toBe(0);
  }, 180000);

  it('P6: an in-sync resync pass is a handful of lists at every size; d drifted fan out exactly d', async () => {
    const { sizes, ok } = await measureResync(ctx as BenchContext, { sizes: [10, 20, 40], passes: 1 });
    expect(sizes.map((s) => s.n)).toEqual([10, 20, 40]);
    for (const s of sizes) {
      expect(s.inSync).toMatchObject({ status: 204, outcome: 'no-gateway-affected', fannedOut: 0, planned: s.n });
      expect(s.inSync.counts.writes).toBe(0);
      // Lists, counted verb by verb against the audit log: one of each, whatever n.
      for (const list of ['list gatewayclasses', 'list gateways', 'list gatewayconfigurations', 'list l34routes', 'list deployments']) expect(s.inSync.counts.byVerb[list]).toBe(1);
      expect(s.inSync.counts.byVerb['get gateways']).toBeUndefined();
      expect(s.inSync.counts.total).toBeLessThanOrEqual(s.requestAllowance);
      expect(s.inSync.requests).toBe(s.inSync.counts.total);
      expect(s.drift).toMatchObject({ exact: true, status: 204, outcome: 'fanned-out' });
      expect(s.drift.fannedOut).toBe(s.drift.d);
      expect(s.allDrifted.fannedOut).toBe(s.n);
    }
    expect(new Set(sizes.map((s) => s.inSync.counts.total)).size).toBe(1);
    expect(ok).toBe(true);
  }, 600000);

  it('P9: `kubectl meridio status -A` is one list of each kind, whatever n, and writes nothing', async () => {
    const { rows } = await measurePluginStatus(ctx as BenchContext, { sizes: [5, 20], repeats: 1 });
    for (const row of rows) {
      expect(row.counts.writes).toBe(0);
      // Other test files' Gateways of the default controller may be listed too.
      expect(row.rows).toBeGreaterThanOrEqual(row.n);
      for (const list of ['list gatewayclasses', 'list gateways', 'list gatewayconfigurations', 'list deployments', 'list pods']) expect(row.counts.byVerb[list]).toBe(1);
      // Whatever other files' Gateways reference: a list of every namespace leaves nothing to get.
      expect(row.counts.byVerb['get gatewayconfigurations']).toBeUndefined();
      expect(row.counts.total).toBeLessThanOrEqual(row.allowance);
    }
    expect(rows[0]?.counts.total).toBe(rows[1]?.counts.total);
  }, 300000);

  it("P10: a template change's drain rolls every LB Deployment, within the budget, for a bounded number of requests per Gateway; a settled Deployment's status event is one census", async () => {
    const { rows, statusEvent, allowancePerGateway } = await measureDrain(ctx as BenchContext, { sizes: [20], budgets: [1, 5] });
    expect(rows.map((r) => [r.n, r.budget, r.rolled, r.complete])).toEqual([[20, 1, 20, true], [20, 5, 20, true]]);
    for (const row of rows) {
      expect(row.requestsPerGateway).toBeLessThanOrEqual(allowancePerGateway);
      expect(row.maxRolling).toBeLessThanOrEqual(row.budget);
      // Every rollout is a Deployment update (one more for a conflict); no Gateway is listed but by the resync.
      expect(row.counts.byVerb['update deployments']).toBeGreaterThanOrEqual(row.n);
      expect(row.counts.byVerb['list gateways']).toBe(row.events['dev.knative.sources.ping']);
      // Each census is one list of the rollout index's holders and one of the head of its line.
      expect(row.deploymentLists.rolling).toBe(row.deploymentLists.line);
    }
    // The settled rollout's event reads the census once (its fan-out kept by the stand-in); the next event of the same Deployment none.
    expect(statusEvent?.settled.counts.byVerb).toEqual({ 'list deployments': 2 });
    expect(statusEvent?.again.deploymentLists).toBe(0);
  }, 600000);
});
