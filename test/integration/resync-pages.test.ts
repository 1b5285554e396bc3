import { AppsV1Api } from '@kubernetes/client-node';
import { LABEL_MANAGED_BY } from '../../api/names.js';
import type { Deployment } from '../../api/schemas.js';
import { driftedTargets, planResync } from '../../functions/dispatch/resync.js';
import { listAll, type RequestCount } from '../../functions/dispatch/resync-inputs.js';
import { deploymentKey } from '../../functions/dispatch/resync-merge.js';
import { byKey, byName, gatewayDrifts, indexRoutes, objectKey } from '../../functions/dispatch/resync-plan.js';
import type { Handled } from '../../functions/handle-event.js';
import { DEPLOYMENTS } from '../../functions/kube/kube-api.js';
import { conditionTime } from '../../functions/reconcile/plan/conditions.js';
import { deploymentName } from '../../functions/reconcile/plan/names.js';
import { countBy, WRITE_VERBS, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import { adminConfig, auditLog } from '../support/cluster.js';
import { createConfiguration, createGateway, createRoute, editDeployment, editSpec, type Spec } from '../support/fixtures.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { convergeResync } from '../support/converge.js';
import { useWorld } from '../support/world.js';

// Issue 32: a resync pass plans a page of Gateways at a time, joined with
// their LB Deployments as the two lists advance (functions/dispatch/
// resync-merge.ts). Differential: with pages of 7 objects, a few hundred
// Gateways are planned page by page and must come out exactly as a plan over
// the whole lists does (every Deployment of the namespace, read whole, as
// observe reads by name), and as the Gateways this test made drift, named
// one by one. Names that sort differently once prefixed, names cut and hashed
// for length, a Deployment that lost its label, one deleted, one of someone
// else's: the join must not lose or mismatch any of them.

const PAGE = 7;
const regular = Array.from({ length: 240 }, (_, i) => `gw-${String(i).padStart(3, '0')}`);
// Neighbours in key order whose sllbr- names must keep that order.
const tricky = ['a', 'a-b', 'a.b', 'a0', 'gw-1', 'gw-1.5', 'gw-10-x'];
// sllbr-<name> is longer than 63: cut and hashed (names.ts).
const longInSync = `long-${'x'.repeat(60)}`;
const longEdited = `long-${'y'.repeat(60)}`;
// Its sllbr- Deployment belongs to someone else: Programmed=False, in sync once said.
const collision = 'coll';
const all = [...regular, ...tricky, longInSync, longEdited, collision];

const handEdited = ['a', 'gw-010', 'gw-123', 'gw-239', longEdited];
const deleted = 'gw-050';
const unlabelled = 'gw-077';
/** Spelled out: what this test made drift, and nothing else. */
const expectedDrifted = [...handEdited, deleted, unlabelled].sort();

function requestsOf(events: AuditEvent[], user: string): AuditEvent[] {
  return events.filter((e) => (e.impersonatedUser?.username ?? e.user.username) === user);
}

describe('resync page by page', () => {
  const w = useWorld('pages');
  const apps = (): AppsV1Api => adminConfig().makeApiClient(AppsV1Api);
  const pass = (): Promise<Handled> =>
    invoke({ kind: 'ping' }, handlerDeps(w.r().deps, { namespaces: [w.ns()], localConcurrency: 8 }), { type: 'dev.knative.sources.ping', id: `pages-${Date.now()}` }, { budgetMs: 120_000 });

  const converge = (): Promise<void> => convergeResync(pass, w.ns(), 300_000);

  it(`a few hundred Gateways in pages of ${PAGE}: the join plans exactly what a plan over the whole lists plans, and exactly the Gateways made to drift`, async () => {
    const ns = w.ns();
    const { api, username, deps } = w.r();
    const scope = { controllerName: deps.settings.controllerName, namespaces: [ns] };
    await createConfiguration(ns, 'cfg');
    await apps().createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: `sllbr-${collision}`, labels: { owner: 'someone-else' } },
        spec: { replicas: 1, selector: { matchLabels: { x: 'y' } }, template: { metadata: { labels: { x: 'y' } }, spec: { containers: [{ name: 'c', image: 'example.invalid/c:1' }] } } },
      },
    });
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < all.length) await createGateway(ns, all[next++] as string, w.cls(), 'cfg');
    }));
    // Routes are looked up by parent: one attached, one naming no Gateway here.
    await createRoute(ns, 'r-attached', 'gw-005', ['20.0.0.1/32']);
    await createRoute(ns, 'r-orphan', 'no-such-gateway', ['20.0.0.2/32']);
    await converge();

    // The long names are cut and hashed; the join must still find their Deployments by key.
    expect(deploymentName(longInSync)).not.toBe(`sllbr-${longInSync}`);
    for (const name of handEdited) {
      await editSpec(DEPLOYMENTS, ns, deploymentName(name), (spec) => {
        const template = spec.template as { spec: { containers: Spec[] } };
        return { ...spec, template: { ...template, spec: { ...template.spec, containers: template.spec.containers.map((c) => ({ ...c, image: 'example.invalid/hand-edited:1' })) } } };
      });
    }
    await apps().deleteNamespacedDeployment({ namespace: ns, name: `sllbr-${deleted}` });
    await editDeployment(ns, `sllbr-${unlabelled}`, (live) => {
      const labels = { ...live.metadata?.labels };
      delete labels[LABEL_MANAGED_BY];
      return { ...live, metadata: { ...live.metadata, labels } };
    });

    // The whole-list plan: every list read whole, every Deployment of the
    // namespace (labelled or not) found by name, each Gateway planned alone.
    const whole: RequestCount = { requests: 0 };
    const [gateways, classes, configurations, routes, deployments] = await Promise.all([
      listAll(api, 'gateways', [ns], whole, 10_000),
      listAll(api, 'gatewayclasses', undefined, whole, 10_000),
      listAll(api, 'gatewayconfigurations', undefined, whole, 10_000),
      listAll(api, 'l34routes', [ns], whole, 10_000),
      listAll(api, 'deployments', [ns], whole, 10_000),
    ]);
    expect(gateways).toHaveLength(all.length);
    const routesByParent = new Map();
    indexRoutes(routesByParent, routes);
    const inputs = { classes: byName(classes), configurations: byKey(configurations), routesByParent, namespaces: null };
    const byDeploymentKey = new Map(deployments.map((d: Deployment) => [objectKey(d.metadata.namespace, d.metadata.name), d]));
    const context = { input: { template: deps.template, settings: deps.settings }, now: conditionTime(deps.clock()) };
    const wholeListPlan = gateways.filter((gw) => gatewayDrifts(gw, byDeploymentKey.get(deploymentKey(gw)) ?? null, inputs, context)).map((gw) => gw.metadata.name).sort();
    expect(wholeListPlan).toEqual(expectedDrifted);

    // Page by page, as the controller's identity, counted in the audit log.
    const window = await auditLog().begin();
    const paged = await planResync(api, scope, deps, { pageSize: PAGE });
    const events = requestsOf(await window.end(), username);
    expect(paged.targets.map((t) => t.key.name)).toEqual(wholeListPlan);
    expect(paged.targets.every((t) => t.key.namespace === ns)).toBe(true);
    expect(paged.gateways).toBe(all.length);
    expect(paged.classes).toEqual([]);
    expect(paged.requests).toBe(events.length);
    expect(events.filter((e) => WRITE_VERBS.includes(e.verb))).toEqual([]);
    // Every page of Gateways read once; the labelled Deployments at most once each page.
    const labelled = deployments.filter((d) => d.metadata.labels?.[LABEL_MANAGED_BY] !== undefined).length;
    expect(countBy(events, { verb: 'list', resource: 'gateways' })).toEqual({ [`${username} list gateways`]: Math.ceil(all.length / PAGE) });
    expect(countBy(events, { verb: 'list', resource: 'deployments' })[`${username} list deployments`]).toBeLessThanOrEqual(Math.ceil(labelled / PAGE) + 1);
    // Read by name: only the Gateways whose Deployment the list could not give
    // and whose plan without one would write (deleted, unlabelled, someone else's).
    const readByName = events.filter((e) => e.verb === 'get' && e.objectRef?.resource === 'deployments').map((e) => e.objectRef?.name).sort();
    expect(readByName).toEqual([`sllbr-${collision}`, `sllbr-${deleted}`, `sllbr-${unlabelled}`]);

    // The shipped page size, and the fan-out path over Gateways in memory: the same.
    const shipped = await planResync(api, scope, deps);
    expect(shipped.targets.map((t) => t.key.name)).toEqual(wholeListPlan);
    const fanned = await driftedTargets(api, scope, { gateways, classes: undefined }, deps);
    expect(fanned.targets.map((t) => t.key.name)).toEqual(wholeListPlan);

    // Reconciled, they converge, and the pages find nothing more.
    await converge();
    expect((await planResync(api, scope, deps, { pageSize: PAGE })).targets).toEqual([]);
  }, 900_000);
});
