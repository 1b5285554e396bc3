import { parseIncoming } from '../../events/incoming.js';
import { startBrokerStandIn } from '../../bench/lib/broker-stand-in.js';
import { apiServerEvent } from '../../events/outgoing.js';
import type { Handled } from '../../functions/handle-event.js';
import { handlerDeps, eventTargets, invoke } from '../support/handler-deps.js';
import { DEPLOYMENTS, GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { PODDISRUPTIONBUDGETS } from '../../api/watched-resources.js';
import { countBy, WRITE_VERBS, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import { auditLog } from '../support/cluster.js';
import { createConfiguration, createGateway, editSpec, rawDeployment, type Spec } from '../support/fixtures.js';
import { convergeResync } from '../support/converge.js';
import { useWorld } from '../support/world.js';

// Issue 17: a resync pass finds drift by lists (functions/dispatch/resync.ts)
// and reconciles only what drifted. Counted from the API server's audit log,
// as the controller's ServiceAccount under the shipped ClusterRole.

const GATEWAYS = 200;
const names = Array.from({ length: GATEWAYS }, (_, i) => `gw-${String(i).padStart(3, '0')}`);

/** The requests one user made. */
function requestsOf(events: AuditEvent[], user: string): AuditEvent[] {
  return events.filter((e) => (e.impersonatedUser?.username ?? e.user.username) === user);
}

describe('resync by lists', () => {
  const w = useWorld('resync');

  /** With `pdb`, the function as LB_PDB_MAX_UNAVAILABLE=1 starts it. */
  let pdb = false;
  afterEach(() => {
    pdb = false;
  });
  const reconcileDeps = () => (pdb ? { ...w.r().deps, settings: { ...w.r().deps.settings, lbPodDisruptionBudget: { maxUnavailable: 1 } } } : w.r().deps);
  const deps = (sink?: string) => handlerDeps(reconcileDeps(), { namespaces: [w.ns()], sink, localConcurrency: 8 });
  const pass = (sink?: string): Promise<Handled> => invoke({ kind: 'ping' }, deps(sink), { type: 'dev.knative.sources.ping', id: `resync-${Date.now()}` }, { budgetMs: 120_000 });

  /** A pass that finds everything in sync: the six requests of a pass (and `extra`), nothing written; returns its requests. */
  const quietPass = async (user: string, planned: number, extra: string[] = []): Promise<AuditEvent[]> => {
    const quiet = await auditLog().begin();
    const inSync = await pass();
    const quietEvents = requestsOf(await quiet.end(), user);
    expect(inSync).toMatchObject({ next: 'settle', outcome: 'no-gateway-affected', gateways: 0, planned });
    const expected = ['get customresourcedefinitions', 'list deployments', 'list gatewayclasses', 'list gatewayconfigurations', 'list gateways', 'list l34routes', ...extra].sort();
    expect(quietEvents.map((e) => `${e.verb} ${e.objectRef?.resource ?? ''}`).sort()).toEqual(expected);
    expect(inSync.requests).toBe(expected.length);
    expect(quietEvents.filter((e) => WRITE_VERBS.includes(e.verb))).toEqual([]);
    return quietEvents;
  };

  const converge = (): Promise<void> => convergeResync(pass, w.ns(), 240_000);

  const editImage = (ns: string, gateway: string, image: string): Promise<unknown> =>
    editSpec(DEPLOYMENTS, ns, `sllbr-${gateway}`, (spec) => {
      const template = spec.template as { spec: { containers: Spec[] } };
      return { ...spec, template: { ...template, spec: { ...template.spec, containers: template.spec.containers.map((c) => ({ ...c, image })) } } };
    });

  it('200 Gateways in sync: one pass is a handful of lists and no write; a hand-edited Deployment is the only Gateway reconciled, and converges', async () => {
    const ns = w.ns();
    const user = w.r().username;
    await createConfiguration(ns, 'cfg');
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < names.length) await createGateway(ns, names[next++] as string, w.cls(), 'cfg');
    }));
    await converge();

    // In sync: every Gateway planned, none reconciled, no write, and the
    // requests spelled out: the GatewayClasses, the GatewayConfigurations,
    // the served namespace's Gateways, LB Deployments and L34Routes (one page
    // each, 200 < 500), and the GatewayClass CRD.
    const quietEvents = await quietPass(user, GATEWAYS);
    // Lists, not one read per Gateway.
    expect(quietEvents.filter((e) => e.verb === 'get' && e.objectRef?.resource === 'gateways')).toEqual([]);
    expect(countBy(quietEvents, { verb: 'list', resource: 'deployments' })).toEqual({ [`${user} list deployments`]: 1 });

    // A Deployment edited by hand: the only Gateway reconciled.
    const edited = 'gw-123';
    await editImage(ns, edited, 'example.invalid/hand-edited:1');
    const window = await auditLog().begin();
    const repaired = await pass();
    const repairEvents = requestsOf(await window.end(), user);
    expect(repaired).toMatchObject({ next: 'settle', outcome: 'applied', gateway: `${ns}/${edited}`, planned: GATEWAYS });
    // Every Gateway read or status write, and every Deployment write, is of that one.
    const gatewayNames = new Set(repairEvents.filter((e) => e.objectRef?.resource === 'gateways' && e.verb !== 'list').map((e) => e.objectRef?.name));
    expect([...gatewayNames]).toEqual([edited]);
    // One write that took; before it, at most a 409 when the Deployment controller's status update of the hand edit came in between (the reconcile observes again).
    const deploymentWrites = repairEvents.filter((e) => e.objectRef?.resource === 'deployments' && WRITE_VERBS.includes(e.verb));
    expect(deploymentWrites.filter((e) => e.responseStatus?.code !== 409).map((e) => `${e.verb} ${e.objectRef?.name} ${e.responseStatus?.code}`)).toEqual([`update sllbr-${edited} 200`]);
    expect(deploymentWrites.length).toBeLessThanOrEqual(2);
    // Converged: the template's images are back, and the next passes settle to nothing drifted.
    const images = ((await rawDeployment(ns, `sllbr-${edited}`)).spec as { template: { spec: { containers: Spec[] } } }).template.spec.containers.map((c) => c.image);
    expect(images).not.toContain('example.invalid/hand-edited:1');
    await converge();
  }, 600_000);

  it('d drifted among n: exactly d reconcile requests handed to the sink; a GatewayConfiguration edit fans out only when it changes something', async () => {
    const ns = w.ns();
    await createConfiguration(ns, 'cfg');
    const few = names.slice(0, 12);
    for (const name of few) await createGateway(ns, name, w.cls(), 'cfg');
    await converge();

    const drifted = ['gw-002', 'gw-005', 'gw-011'];
    for (const name of drifted) await editImage(ns, name, 'example.invalid/hand-edited:2');
    const sink = await startBrokerStandIn();
    try {
      const h = await pass(sink.url);
      expect(h).toMatchObject({ next: 'settle', outcome: 'fanned-out', gateways: drifted.length, planned: few.length });
      expect(sink.keys.sort()).toEqual(drifted.map((n) => `${ns}/${n}`));
    } finally {
      await sink.close();
    }
    await converge();

    // A GatewayConfiguration event: one that changed nothing the Gateways
    // render from (an edit of its metadata, a replayed event) reconciles
    // nothing; a spec edit reconciles every Gateway that uses it.
    const scope = { controllerName: w.r().deps.settings.controllerName, namespaces: [ns] };
    const incoming = parseIncoming(apiServerEvent('update', { apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'GatewayConfiguration', metadata: { name: 'cfg', namespace: ns } }, 'test'));
    if (incoming.kind !== 'apiserver') throw new Error('not an ApiServerSource event');
    expect(await eventTargets(w.r().api, scope, incoming)).toHaveLength(few.length);
    expect(await eventTargets(w.r().api, scope, incoming, w.r().deps)).toEqual([]);
    await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
    expect((await eventTargets(w.r().api, scope, incoming, w.r().deps)).map((t) => t.key.name).sort()).toEqual(few);
  }, 600_000);

  it('with LB PodDisruptionBudgets on: one list more per pass and still no write in sync; a hand-edited PDB is the only Gateway reconciled, with one PDB update', async () => {
    pdb = true;
    const ns = w.ns();
    const user = w.r().username;
    await createConfiguration(ns, 'cfg');
    const few = names.slice(0, 12);
    for (const name of few) await createGateway(ns, name, w.cls(), 'cfg');
    await converge();

    // In sync: the six requests of a pass, plus the list of the managed
    // PDBs (one page, 12 < 500; the same label selector as the Deployments).
    await quietPass(user, few.length, ['list poddisruptionbudgets']);

    // One PDB edited by hand: that Gateway alone is reconciled, and its PDB
    // is the only object written besides the Event that says so.
    const edited = 'gw-007';
    await editSpec(PODDISRUPTIONBUDGETS, ns, `sllbr-${edited}`, (spec) => ({ ...spec, maxUnavailable: 4 }));
    const window = await auditLog().begin();
    const repaired = await pass();
    const repairEvents = requestsOf(await window.end(), user);
    expect(repaired).toMatchObject({ next: 'settle', gateway: `${ns}/${edited}`, planned: few.length });
    const writes = repairEvents.filter((e) => WRITE_VERBS.includes(e.verb)).map((e) => `${e.verb} ${e.objectRef?.resource} ${e.objectRef?.resource === 'events' ? '' : e.objectRef?.name}`);
    expect(writes.sort()).toEqual(['create events ', `update poddisruptionbudgets sllbr-${edited}`]);
    await converge();
  }, 600_000);
});
