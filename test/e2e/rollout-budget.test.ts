import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { CONDITION_APPLIED } from '../../api/names.js';
import { PING_TYPE } from '../../events/types.js';
import { DeploymentSchema, GatewaySchema, type Deployment, type Gateway } from '../../api/schemas.js';
import { GATEWAY_CLASSES, GATEWAYS } from '../../functions/kube/kube-api.js';
import { rolloutState, ROLLOUT_QUEUED } from '../../functions/reconcile/plan/rollout-budget.js';
import { startLocalEventSource, type LocalEventSource } from '../../tools/dev/local-event-source.js';
import { ControlPlane } from '../../tools/controlplane/control-plane.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { repoRoot } from '../../tools/harness/repo-root.js';
import { startFunctionProcess, type FunctionProcess } from '../../tools/harness/function-process.js';
import { adminConfig, createNamespace, useClusterInfo } from '../support/cluster.js';
import { deleteClusterScoped } from '../support/cluster-scoped.js';
import { configurationSpec, createConfiguration, createGateway } from '../support/fixtures.js';
import { CONTROLLER_NAME, controllerIdentity } from '../support/reconciler.js';

// The rollout budget on a control plane whose fake Nodes run the LB Pods to
// Ready (kube-scheduler + KWOK, as the conformance test's plane), with the
// real Deployment controller rolling them: five Gateways in sync, then the LB
// template changes (a new function revision with the new template, as a
// ConfigMap change gives in a cluster). Every Deployment and Gateway change
// is sampled from watches: never more than LB_ROLLOUT_BUDGET (1) Deployments
// rolling at once, every waiting Gateway seen RolloutQueued before its turn,
// and all five converge, woken by the settled rollouts' own events. Then a
// template whose Pods can never become ready (a nodeSelector no Node has):
// the first rollout sticks, holding its slot, the other four keep the old
// template and stay queued; the fixed template (a nodeSelector the Nodes
// have) lets all five converge.

const CLASS = 'meridio-rollout';
const GATEWAYS_ = ['gw-a', 'gw-b', 'gw-c', 'gw-d', 'gw-e'];
const BUDGET = 1;
const LB_IMAGE = 'registry.nordix.org/cloud-native/meridio-2/stateless-load-balancer:latest';

const lbImage = (d: Deployment): string | undefined => d.spec.template.spec?.containers?.find((c) => c.name === 'loadbalancer')?.image;
const applied = (gw: Gateway) => (gw.status?.conditions ?? []).find((c) => c.type === CONDITION_APPLIED);

describe('the rollout budget, with real rollouts on fake Nodes', () => {
  let cp: ControlPlane | undefined;
  let fn: FunctionProcess | undefined;
  let source: LocalEventSource | undefined;
  let ns = '';
  let kubeconfig = '';
  const dir = mkdtempSync(join(tmpdir(), 'rollout-budget-'));
  const deployments = new Map<string, Deployment>();
  const gateways = new Map<string, Gateway>();
  const watches: { abort(): void }[] = [];
  let maxRolling = 0;
  /** Gateways seen RolloutQueued, and the LB image their Deployment had then. */
  const seenQueued = new Map<string, Set<string>>();

  const rollingNow = (): string[] => [...deployments.values()].filter((d) => rolloutState(d) !== 'settled').map((d) => d.metadata.name);

  function template(image: string, nodeSelector?: Record<string, string>): string {
    let text = readFileSync(join(repoRoot(), 'infra', 'templates', 'lb-deployment.yaml'), 'utf8').replace(LB_IMAGE, image);
    if (nodeSelector) {
      // Under the pod spec's first key: a Pod no Node can take never becomes ready.
      text = text.replace(/\n(\s+)serviceAccountName:/, (_m, indent: string) => `\n${indent}nodeSelector:\n${Object.entries(nodeSelector).map(([k, v]) => `${indent}  ${k}: "${v}"`).join('\n')}\n${indent}serviceAccountName:`);
    }
    const file = join(dir, `lb-${deployments.size}-${Date.now()}.yaml`);
    writeFileSync(file, text);
    return file;
  }

  async function serveWith(templateFile: string): Promise<void> {
    await source?.stop();
    await fn?.stop();
    fn = await startFunctionProcess({ kubeconfig, namespaces: [ns], logLevel: 'info', env: { TEMPLATE_PATH: templateFile, LB_ROLLOUT_BUDGET: String(BUDGET) } });
    const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined };
    source = await startLocalEventSource({ kc: adminConfig(), sink: `${fn.url}/`, namespaces: [ns], resyncIntervalMs: 5000, log: quiet });
  }

  const allOn = (image: string) => async (): Promise<true | undefined> => {
    const all = GATEWAYS_.map((g) => deployments.get(`sllbr-${g}`));
    const done = all.every((d) => d !== undefined && lbImage(d) === image && rolloutState(d) === 'settled') && GATEWAYS_.every((g) => applied(gateways.get(g) as Gateway)?.status === 'True');
    if (done) return true;
    // What waitFor reports at its deadline.
    throw new Error(state());
  };

  const state = (): string =>
    GATEWAYS_.map((g) => {
      const d = deployments.get(`sllbr-${g}`);
      const a = gateways.has(g) ? applied(gateways.get(g) as Gateway) : undefined;
      return `${g}: ${d ? `${lbImage(d)} ${rolloutState(d)} ${JSON.stringify(d.status ?? {})}` : 'no Deployment'}; Applied ${a ? `${a.status} ${a.reason}` : '-'}`;
    }).join('\n') + `\nfunction log tail: ${JSON.stringify((fn?.logs ?? []).slice(-3))}`;

  beforeAll(async () => {
    cp = await ControlPlane.start({ fakeNodes: ['fake-node-1', 'fake-node-2'], log: () => undefined });
    useClusterInfo(cp.info);
    ns = await createNamespace('rollout');
    kubeconfig = (await controllerIdentity(ns)).kubeconfig;
    await createConfiguration(ns, 'lb', configurationSpec({ horizontalScaling: { replicas: 1, enforceReplicas: true } }));
    await adminConfig().makeApiClient(CustomObjectsApi).createClusterCustomObject({
      ...GATEWAY_CLASSES,
      body: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: CLASS }, spec: { controllerName: CONTROLLER_NAME } },
    });
    // Every change of every LB Deployment and Gateway, as it happens.
    const watch = new Watch(adminConfig());
    watches.push(
      await watch.watch(`/apis/apps/v1/namespaces/${ns}/deployments`, {}, (_type, obj) => {
        const d = DeploymentSchema.parse(obj);
        deployments.set(d.metadata.name, d);
        maxRolling = Math.max(maxRolling, rollingNow().length);
      }, () => undefined),
      await watch.watch(`/apis/${GATEWAYS.group}/${GATEWAYS.version}/namespaces/${ns}/${GATEWAYS.plural}`, {}, (_type, obj) => {
        const gw = GatewaySchema.parse(obj);
        gateways.set(gw.metadata.name, gw);
        const a = applied(gw);
        const d = deployments.get(`sllbr-${gw.metadata.name}`);
        if (a?.status === 'False' && a.reason === ROLLOUT_QUEUED && d) {
          const seen = seenQueued.get(gw.metadata.name) ?? new Set<string>();
          seen.add(lbImage(d) ?? '');
          seenQueued.set(gw.metadata.name, seen);
        }
      }, () => undefined),
    );
    await serveWith(template('lb:v1'));
    for (const g of GATEWAYS_) await createGateway(ns, g, CLASS, 'lb');
    await waitFor('five Gateways applied, their LB Deployments rolled out on lb:v1', allOn('lb:v1'), { timeoutMs: 120000, intervalMs: 200 });
  }, 300000);

  afterAll(async () => {
    for (const w of watches) w.abort();
    await source?.stop();
    await fn?.stop();
    // What the test registered lives on the private control plane: delete it before that stops.
    await deleteClusterScoped();
    await cp?.stop();
    rmSync(dir, { recursive: true, force: true });
    if (cp) expect(cp.leftovers()).toEqual([]);
  }, 120000);

  it('a template change rolls one LB Deployment at a time; each waiting Gateway is RolloutQueued until its turn', async () => {
    maxRolling = 0;
    seenQueued.clear();
    await serveWith(template('lb:v2'));
    await waitFor('all five rolled out on lb:v2 and applied', allOn('lb:v2'), { timeoutMs: 240000, intervalMs: 200 });
    expect(maxRolling).toBe(BUDGET);
    // Four of the five waited, while their Deployment still had the old image.
    const waited = GATEWAYS_.filter((g) => seenQueued.get(g)?.has('lb:v1'));
    expect(waited).toHaveLength(GATEWAYS_.length - BUDGET);
  }, 300000);

  it('a template whose Pods never become ready stops after the first Gateway; fixing it lets all five converge', async () => {
    maxRolling = 0;
    await serveWith(template('lb:v3-broken', { type: 'no-such-node' }));
    // One rollout started and sticks; the four others stay queued on the old template.
    await waitFor('one Deployment rolling on the broken template, four queued', () => {
      const broken = [...deployments.values()].filter((d) => lbImage(d) === 'lb:v3-broken');
      const queued = GATEWAYS_.filter((g) => applied(gateways.get(g) as Gateway)?.reason === ROLLOUT_QUEUED);
      return broken.length === 1 && queued.length === 4 ? true : undefined;
    }, { timeoutMs: 120000, intervalMs: 200 });
    // Two resync passes later, each of which fans the queued Gateways out
    // again, nothing else has moved.
    const pings = (): number => (fn?.logs ?? []).filter((l) => l.type === PING_TYPE && l.msg === 'event handled').length;
    const before = pings();
    await waitFor('two more resync passes handled', () => (pings() >= before + 2 ? true : undefined), { timeoutMs: 60000, intervalMs: 200 });
    expect([...deployments.values()].filter((d) => lbImage(d) === 'lb:v3-broken')).toHaveLength(1);
    expect(GATEWAYS_.filter((g) => lbImage(deployments.get(`sllbr-${g}`) as Deployment) === 'lb:v2')).toHaveLength(4);
    expect(rollingNow()).toHaveLength(1);

    // The fix an operator makes: a nodeSelector the Nodes have.
    await serveWith(template('lb:v4', { type: 'kwok' }));
    await waitFor('all five rolled out on the fixed template', allOn('lb:v4'), { timeoutMs: 240000, intervalMs: 200 });
    expect(maxRolling).toBe(BUDGET);
  }, 420000);

  it('reads the live Deployments as the sample did (no drift between watch and API)', async () => {
    const live = (await adminConfig().makeApiClient(AppsV1Api).listNamespacedDeployment({ namespace: ns })).items.map((d) => DeploymentSchema.parse(d));
    expect(live.map((d) => lbImage(d)).sort()).toEqual(GATEWAYS_.map(() => 'lb:v4'));
  });
});
