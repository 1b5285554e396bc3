import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { parseIncoming } from '../../events/incoming.js';
import { apiServerEvent } from '../../events/outgoing.js';
import { countBy, matches, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { reconcile, type ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import type { Template } from '../../functions/reconcile/template.js';
import { ROLLING, rolloutIndexKey, templateValue } from '../../functions/reconcile/plan/rollout-index.js';
import { adminConfig, auditLog } from '../support/cluster.js';
import { configurationSpec, createClass, createConfiguration, createGateway, editSpec, rawDeployment, readDeployment } from '../support/fixtures.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { useWorld } from '../support/world.js';
import { withLbImage } from '../support/next-template.js';

// What the rollout census costs (issue 40, item 5), counted in the audit log
// as the controller's ServiceAccount under the shipped ClusterRole, with the
// real Deployment controller. The shared control plane has no Node: a
// Deployment at 0 replicas completes its rollout at once, one at 1 replica
// never does. The census is two label-selected lists of Deployments (the
// rollout index: rollout-index.ts), whatever the number of Gateways; no
// Gateway or GatewayClass is listed.

const OTHER_CONTROLLER = 'example.com/another-install';
const NEXT_IMAGE = 'registry.example/lb:next';

describe('the rollout census in API requests (LB_ROLLOUT_BUDGET=1)', () => {
  const w = useWorld('census');
  const apps = (): AppsV1Api => adminConfig().makeApiClient(AppsV1Api);
  const budgeted = (template?: Template, controllerName?: string): ReconcileDeps => ({
    ...w.r().deps,
    ...(template ? { template } : {}),
    settings: { ...w.r().deps.settings, rolloutBudget: 1, ...(controllerName !== undefined && { controllerName }) },
    namespaces: [w.ns()],
  });
  const nextTemplate = (): Template => withLbImage(w.r().deps.template, NEXT_IMAGE);
  const key = (): string => rolloutIndexKey(w.r().deps.settings.controllerName);
  const indexOf = async (gw: string, k = key()): Promise<string | undefined> => (await readDeployment(w.ns(), `sllbr-${gw}`)).metadata?.labels?.[k];
  const scale = (gw: string, replicas: number): Promise<unknown> =>
    apps().replaceNamespacedDeploymentScale({ namespace: w.ns(), name: `sllbr-${gw}`, body: { metadata: { name: `sllbr-${gw}`, namespace: w.ns() }, spec: { replicas } } });
  const completed = (gw: string) => async (): Promise<true | undefined> => {
    const d = await readDeployment(w.ns(), `sllbr-${gw}`);
    const progressing = d.status?.conditions?.find((c) => c.type === 'Progressing');
    return (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) && progressing?.reason === 'NewReplicaSetAvailable' ? true : undefined;
  };
  const observed = (gw: string) => async (): Promise<true | undefined> => {
    const d = await readDeployment(w.ns(), `sllbr-${gw}`);
    return (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) ? true : undefined;
  };
  const wait = (what: string, check: () => Promise<true | undefined>): Promise<true> => waitFor(what, check, { timeoutMs: 30_000, intervalMs: 100 });
  /** The LB Deployment's event, as the ApiServerSource sends it in Resource mode with the object as it is now, through the handler. */
  const deliverDeployment = async (gw: string, template: Template) => {
    const event = apiServerEvent('update', { apiVersion: 'apps/v1', kind: 'Deployment', ...(await rawDeployment(w.ns(), `sllbr-${gw}`)) } as never, 'https://127.0.0.1');
    return invoke(parseIncoming(event), handlerDeps(budgeted(template), { namespaces: [w.ns()] }), { type: event.type, id: event.id });
  };
  type GatewayStatus = { status?: { conditions?: { type: string; message?: string }[] } };
  const rawGateway = async (name: string): Promise<GatewayStatus> => (await adminConfig().makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways', namespace: w.ns(), name })) as GatewayStatus;
  const lists = (events: AuditEvent[]) => countBy(events, { user: w.r().username, verb: 'list' });
  /** The label selectors of the controller's lists of Deployments (other users, such as kube-controller-manager or another file's event source, list them too). */
  const deploymentSelectors = (events: AuditEvent[]): string[] =>
    events
      .filter((e) => matches(e, { user: w.r().username, verb: 'list', resource: 'deployments' }))
      .map((e) => new URL(e.requestURI, 'https://x').searchParams.get('labelSelector') ?? '');
  /** Gateways at 0 replicas, created under the budget (index `rolling`), their rollouts completed. */
  const fleet = async (names: string[]): Promise<void> => {
    await createConfiguration(w.ns(), 'cfg', configurationSpec({ horizontalScaling: { replicas: 1, enforceReplicas: false } }));
    for (const name of names) await createGateway(w.ns(), name, w.cls(), 'cfg');
    for (const name of names) expect(await reconcile({ namespace: w.ns(), name }, budgeted())).toMatchObject({ deploymentWritten: true });
    for (const name of names) expect(await indexOf(name)).toBe(ROLLING);
    for (const name of names) await scale(name, 0);
    for (const name of names) await wait(`sllbr-${name} completed at 0 replicas`, completed(name));
  };

  it("a settled rollout's status event costs one census (two lists) and its owner's label patch; once the label is back to the template digest, its events cost none", async () => {
    await fleet(['g1', 'g2']);
    const template = w.r().deps.template;

    const first = await auditLog().begin();
    await deliverDeployment('g1', template);
    const firstEvents = await first.end();
    expect(lists(firstEvents)).toEqual({ [`${w.r().username} list deployments`]: 2, [`${w.r().username} list l34routes`]: 1 });
    expect(countBy(firstEvents, { user: w.r().username, verb: 'patch' })).toEqual({ [`${w.r().username} patch deployments`]: 1 });
    expect(await indexOf('g1')).toBe(templateValue(template.hash));

    // The next status event of the same Deployment, and of a settled one that holds no slot: no census.
    const later = await auditLog().begin();
    await deliverDeployment('g1', template);
    const laterEvents = await later.end();
    expect(lists(laterEvents)).toEqual({ [`${w.r().username} list l34routes`]: 1 });
    expect(countBy(laterEvents, { user: w.r().username, verb: ['patch', 'update', 'create'] })).toEqual({});
  });

  it('a drain step: the settled rollout wakes the next, one census for the event and one for the woken verdict, and no Gateway or GatewayClass list', async () => {
    await fleet(['g1', 'g2', 'g3']);
    for (const name of ['g1', 'g2', 'g3']) await deliverDeployment(name, w.r().deps.template);
    const next = nextTemplate();
    // At 1 replica g1's rollout cannot end (no Node) while the others are queued behind it.
    await scale('g1', 1);
    expect(await reconcile({ namespace: w.ns(), name: 'g1' }, budgeted(next))).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    expect(await indexOf('g1')).toBe(ROLLING);
    for (const name of ['g2', 'g3']) expect(await reconcile({ namespace: w.ns(), name }, budgeted(next))).toMatchObject({ outcome: 'rollout-queued', deploymentWritten: false });
    await scale('g1', 0);
    await wait('sllbr-g1 completed on the new template', completed('g1'));

    const step = await auditLog().begin();
    await deliverDeployment('g1', next);
    const events = await step.end();
    expect((await readDeployment(w.ns(), 'sllbr-g2')).spec?.template.spec?.containers[0]?.image).toBe(NEXT_IMAGE);
    expect((await readDeployment(w.ns(), 'sllbr-g3')).spec?.template.spec?.containers[0]?.image).not.toBe(NEXT_IMAGE);
    const u = w.r().username;
    expect(lists(events)).toEqual({ [`${u} list deployments`]: 4, [`${u} list l34routes`]: 2 });
    // Every list of Deployments selects by this controller's index key.
    const selectors = deploymentSelectors(events);
    expect(selectors.every((s) => s.includes(key()))).toBe(true);
  });

  it("the fan-out of a shared configuration's edit, reconciled all at once: one rollout starts, the others are queued; the census reads that configuration's line", async () => {
    await fleet(['g1', 'g2', 'g3']);
    for (const name of ['g1', 'g2', 'g3']) await deliverDeployment(name, w.r().deps.template);
    // At 1 replica no rollout can end (no Node): whatever starts stays in its slot.
    for (const name of ['g1', 'g2', 'g3']) await scale(name, 1);
    // Until the Deployment controller has seen the scale, its status says "rolling" as kubectl rollout status would.
    for (const name of ['g1', 'g2', 'g3']) await wait(`sllbr-${name}'s scale observed`, observed(name));
    const { metadata } = await editSpec(GATEWAY_CONFIGURATIONS, w.ns(), 'cfg', (spec) => ({ ...spec, networkAttachments: [{ type: 'NAD', nad: { name: 'app-net', namespace: 'default', interface: 'net2' } }] }));
    const step = await auditLog().begin();
    const results = await Promise.all(['g1', 'g2', 'g3'].map((name) => reconcile({ namespace: w.ns(), name }, budgeted())));
    const events = await step.end();
    const applied = await Promise.all(['g1', 'g2', 'g3'].map(async (name) => (await rawGateway(name)).status?.conditions?.find((c) => c.type === 'meridio-2.nordix.org/GatewayConfigurationApplied')?.message ?? ''));
    // On a failure, what each Gateway's condition says.
    expect({ outcomes: results.map((r) => r.outcome).sort(), applied: results.some((r) => r.outcome === 'applied') ? [] : applied }).toEqual({ outcomes: ['applied', 'rollout-queued', 'rollout-queued'], applied: [] });
    // Judged from the Deployments: one new pod template, two at the old one.
    const interfaces = await Promise.all(['g1', 'g2', 'g3'].map(async (name) => JSON.stringify((await readDeployment(w.ns(), `sllbr-${name}`)).spec?.template.metadata?.annotations ?? {}).includes('net2')));
    expect(interfaces.filter(Boolean)).toHaveLength(1);
    const selectors = deploymentSelectors(events);
    expect(selectors).toContain(`${key()}-cfg=${(await readDeployment(w.ns(), 'sllbr-g1')).metadata?.labels?.[`${key()}-cfg`]},${key()}-gen!=${metadata.generation}`);
  });

  it("another controller's rolling LB Deployment is neither read nor counted: ours rolls past it", async () => {
    await fleet(['g1']);
    await deliverDeployment('g1', w.r().deps.template);
    // Another install (another CONTROLLER_NAME) and its Gateway, whose rollout at 1 replica never ends.
    const otherClass = `other-${w.ns()}`;
    await createClass(otherClass, OTHER_CONTROLLER);
    await createGateway(w.ns(), 'o1', otherClass, 'cfg');
    expect(await reconcile({ namespace: w.ns(), name: 'o1' }, budgeted(undefined, OTHER_CONTROLLER))).toMatchObject({ deploymentWritten: true });
    expect(await indexOf('o1', rolloutIndexKey(OTHER_CONTROLLER))).toBe(ROLLING);
    expect(await indexOf('o1')).toBeUndefined();

    const step = await auditLog().begin();
    expect(await reconcile({ namespace: w.ns(), name: 'g1' }, budgeted(nextTemplate()))).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    const events = await step.end();
    expect((await readDeployment(w.ns(), 'sllbr-o1')).status?.availableReplicas ?? 0).toBe(0);
    expect(lists(events)).toEqual({ [`${w.r().username} list deployments`]: 2, [`${w.r().username} list l34routes`]: 1 });
    const selectors = deploymentSelectors(events);
    expect(selectors.length).toBe(2);
    expect(selectors.some((s) => s.includes(rolloutIndexKey(OTHER_CONTROLLER)))).toBe(false);
  });
});
