import { createServer, type Server, type Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { reconcileEvent } from '../../events/outgoing.js';
import { GATEWAY_CONFIGURATIONS, kubeApi } from '../../functions/kube/kube-api.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { ADMITTED_SPEC_ANNOTATION } from '../../api/names.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { loadTemplate } from '../../functions/reconcile/template.js';
import { countBy, WRITE_VERBS, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, auditLog } from '../support/cluster.js';
import { APPLIED, condition, editDeployment, editSpec, listEvents, readDeployment, readGateway } from '../support/fixtures.js';
import { INJECTED_ANNOTATION, MIRROR, mutateDeployments, type Mutations } from '../../tools/mutating-policies.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { CONTROLLER_NAME, LB_SERVICE_ACCOUNT, TEMPLATE_FILE } from '../support/reconciler.js';
import { useWorld } from '../support/world.js';

// Real admission, bursts and a hung API server (issue: quiet and truthful).

const deploymentWrites = (events: AuditEvent[], user: string): number =>
  Object.values(countBy(events, { user, verb: WRITE_VERBS, resource: 'deployments' })).reduce((a, b) => a + b, 0);

async function settleDeploymentStatus(ns: string): Promise<void> {
  await waitFor('the deployment controller to observe the Deployment', async () => {
    const d = await readDeployment(ns, 'sllbr-gw');
    return d.status?.observedGeneration === d.metadata?.generation ? true : undefined;
  });
}

describe('mutating admission', () => {
  const w = useWorld('adm');
  let policies: Mutations | undefined;
  afterEach(async () => {
    await policies?.remove();
    policies = undefined;
  });

  it('images rewritten and an annotation added at admission: at most 2 writes to converge, then zero writes; a hand edit is corrected', async () => {
    const ns = w.ns();
    const r = w.r();
    policies = await mutateDeployments(adminConfig(), ns);
    await w.setup();

    const converging = await auditLog().begin();
    expect(await reconcile(w.key(), r.deps)).toMatchObject({ outcome: 'applied', next: 'settle' });
    await settleDeploymentStatus(ns);
    // Absorbs the deployment controller's status (LoadBalancerAvailable).
    await reconcile(w.key(), r.deps);
    const convergence = await converging.end();
    expect(deploymentWrites(convergence, r.username)).toBeLessThanOrEqual(2);

    const live = await readDeployment(ns, 'sllbr-gw');
    const images = live.spec?.template.spec?.containers.map((c) => c.image) ?? [];
    expect(images.length).toBeGreaterThanOrEqual(2);
    for (const image of images) expect(image?.startsWith(MIRROR)).toBe(true);
    expect(live.spec?.template.metadata?.annotations?.[INJECTED_ANNOTATION]).toBe('true');
    expect(live.metadata?.annotations?.[ADMITTED_SPEC_ANNOTATION]).toBeDefined();
    expect(condition(await readGateway(ns, 'gw'), APPLIED)).toMatchObject({ status: 'True', reason: 'Applied' });
    const told = (await listEvents(ns)).find((e) => e.reason === 'MutatedByAdmission');
    expect(told?.note).toContain('image');

    const quiet = await auditLog().begin();
    for (let i = 0; i < 3; i++) expect(await reconcile(w.key(), r.deps)).toMatchObject({ outcome: 'in-sync', deploymentWritten: false, statusWritten: false, eventsWritten: 0 });
    expect(countBy(await quiet.end(), { user: r.username, verb: WRITE_VERBS })).toEqual({});

    // A person sets the router image by hand: corrected on the next event.
    await editDeployment(ns, 'sllbr-gw', (edited) => {
      const router = edited.spec?.template.spec?.containers.find((c) => c.name === 'router');
      if (!router) throw new Error('the template has no router container');
      router.image = `${MIRROR}someone/debug-router:1`;
      return edited;
    });
    expect(await reconcile(w.key(), r.deps)).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    const fixed = await readDeployment(ns, 'sllbr-gw');
    const fixedRouter = fixed.spec?.template.spec?.containers.find((c) => c.name === 'router')?.image ?? '';
    expect(fixedRouter.startsWith(MIRROR)).toBe(true);
    expect(fixedRouter).not.toContain('debug-router');
    const after = await auditLog().begin();
    expect(await reconcile(w.key(), r.deps)).toMatchObject({ deploymentWritten: false });
    expect(deploymentWrites(await after.end(), r.username)).toBe(0);
  });
});

describe('a burst for one Gateway in one process', () => {
  const w = useWorld('burst');
  let fn: FunctionProcess | undefined;
  afterEach(async () => {
    await fn?.stop();
    fn = undefined;
  });

  it('30 concurrent reconcile requests after a configuration edit: one successful Deployment write, few requests, every answer 2xx or 503', async () => {
    const ns = w.ns();
    const r = w.r();
    await w.setup();
    await reconcile(w.key(), r.deps);
    const started = await startFunctionProcess({ kubeconfig: r.kubeconfig, namespaces: [ns] });
    fn = started;
    await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));

    const window = await auditLog().begin();
    const answers = await Promise.all(Array.from({ length: 30 }, async () => (await started.post(reconcileEvent(w.key(), { type: 'test.burst', id: 'burst' }))).status));
    const events = await window.end();

    for (const status of answers) expect([200, 202, 204, 503]).toContain(status);
    const deployments = events.filter((e) => e.user.username === r.username && e.verb === 'update' && e.objectRef?.resource === 'deployments' && !e.objectRef.subresource);
    expect(deployments.filter((e) => e.responseStatus?.code === 200)).toHaveLength(1);
    expect(deployments.length).toBeLessThanOrEqual(3);
    const statuses = events.filter((e) => e.user.username === r.username && e.verb === 'update' && e.objectRef?.resource === 'gateways' && e.objectRef.subresource === 'status');
    expect(statuses.length).toBeLessThanOrEqual(3);
    expect((await readDeployment(ns, 'sllbr-gw')).spec?.replicas).toBe(3);
    expect(condition(await readGateway(ns, 'gw'), APPLIED)).toMatchObject({ status: 'True' });
  });
});

describe('an API server that accepts connections and never answers', () => {
  let server: Server | undefined;
  const sockets = new Set<Socket>();
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  it('the invocation answers 503 within its budget, and classifies it as a deadline', async () => {
    server = createServer((socket) => {
      sockets.add(socket);
      // Read and never answer, not even the TLS handshake.
      socket.on('data', () => undefined);
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', () => resolve()));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'hung', server: `https://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'x' }],
      contexts: [{ name: 'hung', cluster: 'hung', user: 'u' }],
      currentContext: 'hung',
    });
    const api = kubeApi(kc, { requestTimeoutMs: 60_000 });
    const budgetMs = 1500;
    const reconcileDeps = { api, template: loadTemplate(TEMPLATE_FILE), settings: { controllerName: CONTROLLER_NAME, lbServiceAccount: LB_SERVICE_ACCOUNT }, clock: () => new Date(), instance: 'test' };
    const deps = handlerDeps(reconcileDeps, { namespaces: ['any'] });
    const handled = await invoke({ kind: 'reconcile', key: { namespace: 'any', name: 'gw' }, cause: undefined }, deps, { type: 'reconcile', id: 'hung' }, { budgetMs });
    expect(handled.next).toBe('redeliver');
    expect(handled.detail).toMatch(/transient/);
    // The request's own timeout (60 s) was not what ended it: the budget was.
    expect(handled.detail).toMatch(/budget of 1500 ms ran out/);
    // Dispatch reads are under the same budget.
    const ping = await invoke({ kind: 'ping' }, deps, { type: 'ping', id: 'hung-ping' }, { budgetMs });
    expect(ping).toMatchObject({ next: 'redeliver', outcome: 'deadline-exceeded' });
  });
});

