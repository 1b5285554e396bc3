import { existsSync } from 'node:fs';
import { countBy } from '../../tools/controlplane/audit-log.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { APPLIED_CONFIGURATION_GENERATION } from '../../api/names.js';
import { keyText } from '../../api/gateway-key.js';
import type { GatewayConfiguration } from '../../api/schemas.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { reconcile, type ReconcileResult } from '../../functions/reconcile/reconcile.js';
import { sharedReads } from '../../functions/reconcile/shared-reads.js';
import { batchSize, FAN_OUT_CONCURRENCY } from '../../functions/dispatch/fan-out.js';
import { FAN_OUT_BATCH } from '../../functions/reconcile-targets.js';
import { NO_TELEMETRY } from '../../functions/telemetry/telemetry.js';
import { connect } from '../../bench/lib/cluster.js';
import type { BenchContext } from '../../bench/lib/context.js';
import { setUp, tearDown } from '../../bench/lib/setup.js';
import { measureFanOut } from '../../bench/measures/fan-out.js';
import { auditLog, clusterInfo } from '../support/cluster.js';
import { createConfiguration, createGateway, editSpec, rawDeployment } from '../support/fixtures.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { useWorld } from '../support/world.js';

// What a fan-out costs in API requests (docs/design.md §2, "Fan-out in
// batches"): a reconcile request of a fan-out too large to have every
// request in flight at once names up to FAN_OUT_BATCH Gateways of one
// namespace, whose class, GatewayConfiguration and routes are read once; each
// Gateway's own objects are read for it, and only by a first attempt that did
// not wait in the coalescer. Counted in the audit log of the real API server.

const CAUSE = { type: 'test.fan-out', id: 'batch' };
const appliedGeneration = async (namespace: string, gateway: string): Promise<string | undefined> =>
  (await rawDeployment(namespace, `sllbr-${gateway}`)).metadata.annotations?.[APPLIED_CONFIGURATION_GENERATION];

function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('a reconcile request naming a batch', () => {
  const w = useWorld('batch');
  const names = ['gw-1', 'gw-2', 'gw-3', 'gw-4'];

  async function batchWorld(): Promise<void> {
    await createConfiguration(w.ns(), 'cfg');
    for (const name of names) await createGateway(w.ns(), name, w.cls(), 'cfg');
  }

  it('reconciles every Gateway it names, reading the class, the configuration and the routes once', async () => {
    await batchWorld();
    const [first, ...rest] = names.map((name) => w.key(name)) as [ReturnType<typeof w.key>, ...ReturnType<typeof w.key>[]];
    const deps = handlerDeps(w.r().deps, { namespaces: [w.ns()] });
    const window = await auditLog().begin();
    const handled = await invoke({ kind: 'reconcile', key: first, cause: undefined, also: rest.map((key) => ({ key })) }, deps, CAUSE);
    const events = await window.end();
    expect(handled).toMatchObject({ next: 'settle', outcome: 'applied', gateways: 4, gateway: names.map((n) => `${w.ns()}/${n}`).join(',') });
    const user = w.r().username;
    const counts = countBy(events, { user });
    expect({
      gateways: counts[`${user} get gateways`],
      deployments: counts[`${user} get deployments`],
      classes: counts[`${user} get gatewayclasses`],
      configurations: counts[`${user} get gatewayconfigurations`],
      routes: counts[`${user} list l34routes`],
      created: counts[`${user} create deployments`],
      status: counts[`${user} update gateways/status`],
    }).toEqual({ gateways: 4, deployments: 4, classes: 1, configurations: 1, routes: 1, created: 4, status: 4 });
    for (const name of names) expect(await appliedGeneration(w.ns(), name)).toBe('1');
  });

  it('a run that waited in line reads for itself: a request that joined it sees an edit made after the batch read', async () => {
    await batchWorld();
    const ns = w.ns();
    const deps = handlerDeps(w.r().deps, { namespaces: [ns] });
    // gw-2 is busy: its run in the batch waits in line behind this one.
    const held = gate();
    const idle: ReconcileResult = { outcome: 'in-sync', next: 'settle', deploymentWritten: false, pdbWritten: false, statusWritten: false, eventsWritten: 0, attempts: 1 };
    const busy = deps.coalescer.run(keyText(w.key('gw-2')), { deadline: Date.now() + 120_000, api: w.r().api, telemetry: NO_TELEMETRY }, async () => {
      await held.promise;
      return idle;
    });
    const batch = invoke({ kind: 'reconcile', key: w.key('gw-1'), cause: undefined, also: [{ key: w.key('gw-2') }, { key: w.key('gw-3') }] }, deps, CAUSE, { budgetMs: 110_000 });
    // gw-1 is written from the batch's reads, so they were made: now edit.
    await waitFor('gw-1 written by the batch', async () => ((await appliedGeneration(ns, 'gw-1').catch(() => undefined)) === '1' ? true : undefined));
    expect((await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }))).metadata.generation).toBe(2);
    // A request for gw-2 that arrives after the edit joins the waiting run,
    // which works for the batch (its deadline is later) and answers both.
    const late = invoke({ kind: 'reconcile', key: w.key('gw-2'), cause: undefined }, deps, { type: 'test.late', id: 'late' }, { budgetMs: 60_000 });
    held.open();
    await busy;
    const [b, l] = await Promise.all([batch, late]);
    expect(l).toMatchObject({ next: 'settle', outcome: 'applied' });
    expect(b).toMatchObject({ next: 'settle', outcome: 'applied', gateways: 3 });
    // gw-2 rendered from the edit; gw-3, which did not wait, from the batch's shared reads.
    expect(await appliedGeneration(ns, 'gw-2')).toBe('2');
    expect(await appliedGeneration(ns, 'gw-3')).toBe('1');
  });

  it('shared reads serve the first attempt only: one that observed an older configuration than the Deployment records observes again, afresh', async () => {
    await w.setup();
    const { api, deps } = w.r();
    expect((await reconcile(w.key(), deps)).outcome).toBe('applied');
    const old = (await api.getGatewayConfiguration(w.ns(), 'cfg')) as GatewayConfiguration;
    await editSpec(GATEWAY_CONFIGURATIONS, w.ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
    expect((await reconcile(w.key(), deps)).outcome).toBe('applied');
    const stale = { ...sharedReads(api), getGatewayConfiguration: async () => old };
    expect(await reconcile(w.key(), deps, { firstReads: stale })).toMatchObject({ outcome: 'in-sync', attempts: 2, deploymentWritten: false });
    expect(await appliedGeneration(w.ns(), 'gw')).toBe('2');
  });
});

// P4 of the bench, counts only (the times are the bench's): the shipped
// function fans an edit of a GatewayConfiguration shared by 100 Gateways out
// to itself, as a real process under the controller's identity.
describe('a fan-out of 100 Gateways: requests', () => {
  let ctx: BenchContext | undefined;

  beforeAll(async () => {
    if (!existsSync('dist/function.blob')) throw new Error('dist/function.blob is missing: run `npm test` (it builds first) or `npm run build:bundle`');
    ctx = await setUp(connect(clusterInfo(), { controllerManager: true }), () => undefined);
  }, 120000);

  afterAll(async () => {
    if (ctx) await tearDown(ctx, { namespaces: true });
  });

  it('at most 6 requests per Gateway, one GatewayClass list for the event, every Gateway applied', async () => {
    const { sizes } = await measureFanOut(ctx as BenchContext, { sizes: [100], repeats: 1 });
    const [p4] = sizes;
    if (!p4) throw new Error('no P4 figure');
    // A fan-out of 100 waits on 16 senders: batches of ceil(100 / 16) = 7, so 15 requests.
    const requests = Math.ceil(100 / batchSize(100, FAN_OUT_CONCURRENCY, FAN_OUT_BATCH));
    expect(requests).toBe(15);
    expect(p4.outcomes).toEqual({ applied: requests });
    // The shared reads, once a request; each Gateway's, once. A write answered
    // 409 (the Deployment controller's status came between the read and the
    // write) makes that reconcile observe again, its own and the shared
    // objects afresh, and write once more.
    const again = p4.counts.conflicts;
    const verbs = p4.counts.byVerb;
    expect({
      classLists: verbs['list gatewayclasses'],
      classGets: verbs['get gatewayclasses'],
      configurationGets: verbs['get gatewayconfigurations'],
      gatewayGets: verbs['get gateways'],
      writes: (verbs['update deployments'] ?? 0) + (verbs['update gateways/status'] ?? 0),
    }).toEqual({ classLists: 1, classGets: requests + again, configurationGets: requests + again, gatewayGets: 100 + again, writes: 200 + again });
    expect(p4.requestsPerGateway).toBeLessThanOrEqual(6);
  }, 600000);
});
