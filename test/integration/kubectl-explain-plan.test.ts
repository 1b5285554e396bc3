import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import { runExplain, explainGateway } from '../../cli/kubectl-meridio/explain.js';
import { runPlan, planGateways } from '../../cli/kubectl-meridio/plan.js';
import type { PluginContext } from '../../cli/kubectl-meridio/plugin-context.js';
import { VerbError } from '../../cli/kubectl-meridio/verb-error.js';
import { GATEWAYS, GATEWAY_CONFIGURATIONS, kubeApi } from '../../functions/kube/kube-api.js';
import { reconcile, type ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import { parseTemplate } from '../../functions/reconcile/template.js';
import { WRITE_VERBS, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, auditLog } from '../support/cluster.js';
import { condition, configurationSpec, createClass, createConfiguration, createGateway, editDeployment, editSpec, readDeployment, readGateway } from '../support/fixtures.js';
import { applyManifest, buildInstall, ensureKnativeCrds, objectManifest } from '../support/install.js';
import { kubectlMeridio, pluginReader, PLUGIN_READER_RBAC_FILE } from '../support/kubectl-meridio.js';
import { shippedRbacDocument, type ServiceAccountIdentity } from '../../tools/harness/service-account-identity.js';
import { grantedKeys, usedKeys } from '../support/rbac-usage.js';
import { freezeDeployments } from '../support/policies.js';
import { CONTROLLER_NAME, TEMPLATE_FILE } from '../support/reconciler.js';
import { useWorld } from '../support/world.js';

// `kubectl meridio explain` and `plan` on the real API server, as a person
// bound to read-only rules under the RBAC authorizer, against the
// controller's Service and LB template ConfigMap as the install renders them
// (kustomize build infra/). The controller's reconciles (its own identity)
// bring each Gateway into the state the verb is asked about; every verb's
// requests are read back from the audit log: reads only, and few.

const APPLIED = 'meridio-2.nordix.org/GatewayConfigurationApplied';
const NEXT_IMAGE = 'registry.example/stateless-load-balancer:next';
const SHIPPED = readFileSync(TEMPLATE_FILE, 'utf8');
const NEXT = SHIPPED.replace('registry.nordix.org/cloud-native/meridio-2/stateless-load-balancer:latest', NEXT_IMAGE);

/** explain's reads of one Gateway: the install (2), observe (5), the Warnings (1); a queued one adds the census (2: the slot holders and the head of the line). */
const EXPLAIN_READS = 8;
const CENSUS_READS = 2;

const scratch = mkdtempSync(join(tmpdir(), 'kubectl-meridio-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('kubectl meridio explain and plan, read-only', () => {
  const w = useWorld('kx');
  let reader: ServiceAccountIdentity;
  beforeAll(async () => {
    await ensureKnativeCrds();
  });

  /**
   * The controller's Knative Service and template ConfigMap as `kustomize
   * build infra/` renders them, in the test's namespace, with `env` set on
   * the Service and, with `template`, the ConfigMap's text replaced.
   */
  const installController = async (env: Record<string, string> = {}, template?: string): Promise<void> => {
    const objects = (await buildInstall('infra')).map((m) => structuredClone(m.object) as Record<string, unknown> & { kind: string; apiVersion: string; metadata: { name: string; namespace?: string }; data?: Record<string, string>; spec?: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } });
    const service = objects.find((o) => o.kind === 'Service' && o.apiVersion.startsWith('serving.knative.dev/'));
    const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('meridio-2-lb-template'));
    if (!service?.spec || !configMap?.data) throw new Error('the install renders no controller Service or template ConfigMap');
    const container = service.spec.template.spec.containers[0];
    if (!container) throw new Error('the Service has no container');
    container.env = [...container.env.filter((e) => !(e.name in env)), ...Object.entries(env).map(([name, value]) => ({ name, value }))];
    if (template !== undefined) configMap.data = Object.fromEntries(Object.keys(configMap.data).map((k) => [k, template]));
    for (const o of [configMap, service]) await applyManifest(objectManifest({ ...o, metadata: { ...o.metadata, namespace: w.ns() } }));
  };

  beforeEach(async () => {
    reader = await pluginReader(w.ns(), w.ns());
  });

  const ctx = (output: PluginContext['output'] = 'table'): PluginContext => ({ api: kubeApi(reader.kc), controllerName: CONTROLLER_NAME, namespace: w.ns(), output, now: new Date() });
  const where = (): { controllerService: { namespace: string; name: string } } => ({ controllerService: { namespace: w.ns(), name: 'meridio-2-gateway-controller' } });
  const deps = (template = SHIPPED, settings: Partial<ReconcileDeps['settings']> = {}): ReconcileDeps => ({ ...w.r().deps, template: parseTemplate(template), settings: { ...w.r().deps.settings, ...settings }, namespaces: [w.ns()] });

  /** The reader's requests while `run` runs, from the audit log. */
  const requestsOf = async <T>(run: () => Promise<T>): Promise<{ value: T; requests: AuditEvent[] }> => {
    const window = await auditLog().begin();
    const value = await run();
    const requests = (await window.end()).filter((e) => e.user.username === reader.username);
    return { value, requests };
  };
  const writes = (requests: AuditEvent[]): string[] => requests.filter((e) => WRITE_VERBS.includes(e.verb)).map((e) => `${e.verb} ${e.requestURI}`);
  const denied = (requests: AuditEvent[]): string[] => requests.filter((e) => e.responseStatus?.code === 403).map((e) => `${e.verb} ${e.requestURI}`);

  const apps = (): AppsV1Api => adminConfig().makeApiClient(AppsV1Api);
  const scale = (gw: string, replicas: number): Promise<unknown> =>
    apps().replaceNamespacedDeploymentScale({ namespace: w.ns(), name: `sllbr-${gw}`, body: { metadata: { name: `sllbr-${gw}`, namespace: w.ns() }, spec: { replicas } } });
  const until = (what: string, check: () => Promise<boolean>): Promise<true> => waitFor(what, async () => ((await check()) ? true : undefined), { timeoutMs: 60_000, intervalMs: 200 });
  const progressing = async (gw: string): Promise<string | undefined> => (await readDeployment(w.ns(), `sllbr-${gw}`)).status?.conditions?.find((c) => c.type === 'Progressing')?.reason;
  const rolledOutAt = (gw: string, replicas: number) => async (): Promise<boolean> => {
    const d = await readDeployment(w.ns(), `sllbr-${gw}`);
    return (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) && (await progressing(gw)) === 'NewReplicaSetAvailable' && (d.status?.replicas ?? 0) === replicas && (d.status?.updatedReplicas ?? 0) === replicas;
  };
  /** Reconciled by the controller, scaled to 0 by an HPA, its rollout complete: nothing to wait for. */
  const settledGateway = async (gw: string, template = SHIPPED): Promise<void> => {
    expect(await reconcile(w.key(gw), deps(template))).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    await scale(gw, 0);
    await until(`sllbr-${gw} rolled out at 0 replicas`, rolledOutAt(gw, 0));
  };
  const zeroScaleConfiguration = (): Promise<unknown> => createConfiguration(w.ns(), 'cfg', configurationSpec({ horizontalScaling: { replicas: 1, enforceReplicas: false } }));

  it('applied, then apply failed under a denying ValidatingAdmissionPolicy, then retries exhausted: each sentence, reads only, and few', async () => {
    await installController();
    await zeroScaleConfiguration();
    await createGateway(w.ns(), 'gw', w.cls(), 'cfg');
    await settledGateway('gw');

    const applied = await requestsOf(() => runExplain(ctx(), { name: 'gw', ...where() }));
    expect(applied.value.text.split('\n')[0]).toBe(`GatewayConfiguration cfg generation 1 is applied: Deployment ${w.ns()}/sllbr-gw runs it, 0/0 LB replicas available`);
    expect(applied.value.exitCode).toBe(0);
    expect(writes(applied.requests)).toEqual([]);
    expect(denied(applied.requests)).toEqual([]);
    expect(applied.requests.map((e) => `${e.verb} ${e.objectRef?.resource ?? ''}`).sort()).toEqual(['get configmaps', 'get deployments', 'get gatewayclasses', 'get gatewayconfigurations', 'get gateways', 'get services', 'list events', 'list l34routes']);
    expect(applied.requests.length).toBe(EXPLAIN_READS);

    const plan = await requestsOf(() => runPlan(ctx(), { ...where() }));
    expect(plan.value.exitCode).toBe(0);
    expect(plan.value.text).toMatch(new RegExp(`^${w.ns()}/gw\\s+nothing\\s+no\\s+the Deployment is as rendered`, 'm'));
    expect(writes(plan.requests)).toEqual([]);
    expect(denied(plan.requests)).toEqual([]);

    const freeze = await freezeDeployments(w.ns(), 'sllbr-gw', 'LB Deployments are frozen');
    try {
      await editSpec(GATEWAY_CONFIGURATIONS, w.ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 2, enforceReplicas: true } }));
      expect((await reconcile(w.key(), deps())).outcome).toBe('write-failed');
      const failed = await requestsOf(() => explainGateway(ctx(), { name: 'gw', ...where() }));
      expect(failed.value).toMatchObject({ state: 'apply-failed' });
      expect(failed.value.sentence).toMatch(new RegExp(`^GatewayConfiguration cfg generation 2 is not applied for \\d+s: the Deployment write is denied by ValidatingAdmissionPolicy freeze-${w.ns()} \\(HTTP 422\\); the LB Pods keep running generation 1$`));
      expect(failed.value.evidence.events.map((e) => `${e.object} ${e.reason}`)).toContain('Gateway/gw ApplyFailed');
      expect(writes(failed.requests)).toEqual([]);

      expect((await reconcile(w.key(), deps(), { retriesExhausted: { message: 'the Broker gave up after 3 deliveries' } })).outcome).toBe('write-failed');
      const exhausted = await explainGateway(ctx(), { name: 'gw', ...where() });
      expect(exhausted.state).toBe('retries-exhausted');
      expect(exhausted.sentence).toMatch(new RegExp(`^GatewayConfiguration cfg generation 2 is not applied for \\d+s: the Deployment write is denied by ValidatingAdmissionPolicy freeze-${w.ns()} \\(HTTP 422\\), 1 delivery dead-lettered; the LB Pods keep running generation 1$`));
    } finally {
      await freeze.lift();
    }
  });

  it('queued behind a rollout (LB_ROLLOUT_BUDGET=1), and plan previews the rollout of a new template with --template: verdicts and exit codes', async () => {
    // Watching this test's namespace only: another file's rollouts hold no slot of its census.
    await installController({ LB_ROLLOUT_BUDGET: '1', WATCH_NAMESPACES: w.ns() }, NEXT);
    await zeroScaleConfiguration();
    for (const gw of ['g1', 'g2']) await createGateway(w.ns(), gw, w.cls(), 'cfg');
    for (const gw of ['g1', 'g2']) await settledGateway(gw);
    // The installed template moved on to NEXT: g1 rolls it at 1 replica
    // (a rollout that never completes without a Node: it holds the slot),
    // g2 is queued behind it.
    await scale('g1', 1);
    expect(await reconcile(w.key('g1'), deps(NEXT, { rolloutBudget: 1 }))).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    await until('sllbr-g1 rolling', async () => (await progressing('g1')) !== 'NewReplicaSetAvailable');
    expect(await reconcile(w.key('g2'), deps(NEXT, { rolloutBudget: 1 }))).toMatchObject({ outcome: 'rollout-queued', deploymentWritten: false });
    expect(condition(await readGateway(w.ns(), 'g2'), APPLIED)?.reason).toBe('RolloutQueued');

    const queued = await requestsOf(() => explainGateway(ctx(), { name: 'g2', ...where() }));
    expect(queued.value.state).toBe('queued');
    expect(queued.value.sentence).toMatch(new RegExp(`^GatewayConfiguration cfg generation 1 is not applied for \\d+s: its LB rollout waits for the rollout budget \\(1 at once\\), #1 in line; 1 slot held \\(${w.ns()}/sllbr-g1: rolling\\); the LB Pods keep running generation 1$`));
    expect(queued.value.evidence.applied.find((r) => r.input === 'LB template hash')?.same).toBe(false);
    expect(writes(queued.requests)).toEqual([]);
    expect(denied(queued.requests)).toEqual([]);
    expect(queued.requests.length).toBe(EXPLAIN_READS + CENSUS_READS);

    const rolling = await explainGateway(ctx(), { name: 'g1', ...where() });
    expect(rolling).toMatchObject({ state: 'rolling' });

    // The installed template: g1 is in sync, g2 waits (it would roll): exit 3.
    const plan = await requestsOf(() => runPlan(ctx('json'), { ...where() }));
    expect(plan.value.exitCode).toBe(1);
    const report = JSON.parse(plan.value.text) as Awaited<ReturnType<typeof planGateways>>;
    expect(report.gateways.map((g) => [g.gateway, g.verdict, g.rolls])).toEqual([[`${w.ns()}/g1`, 'nothing', false], [`${w.ns()}/g2`, 'queued', true]]);
    expect(report.gateways[1]?.fields).toEqual(['spec.template.spec.containers[loadbalancer].image']);
    expect(report.gateways[1]?.causes).toEqual(['template']);
    expect(writes(plan.requests)).toEqual([]);
    expect(denied(plan.requests)).toEqual([]);

    // The upgrade preview: a release's template file with the shipped image back.
    const file = join(scratch, `${w.ns()}.yaml`);
    writeFileSync(file, SHIPPED);
    const preview = await planGateways(ctx(), { ...where(), templateFile: file, name: 'g2' });
    expect(preview.template.source).toBe(file);
    expect(preview.gateways.map((g) => [g.gateway, g.verdict])).toEqual([[`${w.ns()}/g2`, 'nothing']]);
    // A file that is not a Deployment: a clear error, nothing read past the Service.
    writeFileSync(file, 'kind: ConfigMap\n');
    await expect(planGateways(ctx(), { ...where(), templateFile: file })).rejects.toThrow(new VerbError(`${file} has kind ConfigMap, want Deployment`));
  });

  it('a stuck rollout (progress deadline exceeded)', async () => {
    await installController();
    await zeroScaleConfiguration();
    await createGateway(w.ns(), 'gw', w.cls(), 'cfg');
    expect(await reconcile(w.key(), deps())).toMatchObject({ outcome: 'applied' });
    // One replica that no Node runs, and a deadline of 1 s: the Deployment controller gives up.
    await editDeployment(w.ns(), 'sllbr-gw', (d) => ({ ...d, spec: { ...d.spec!, progressDeadlineSeconds: 1 } }));
    await until('sllbr-gw past its progress deadline', async () => (await progressing('gw')) === 'ProgressDeadlineExceeded');
    const stuck = await requestsOf(() => explainGateway(ctx(), { name: 'gw', ...where() }));
    expect(stuck.value.state).toBe('stuck');
    expect(stuck.value.sentence).toMatch(new RegExp(`^GatewayConfiguration cfg generation 1 is applied to Deployment ${w.ns()}/sllbr-gw, but its LB rollout is stuck for \\d+s: deployment "sllbr-gw" exceeded its progress deadline; 1/1 replicas updated, 0 available$`));
    expect(stuck.value.evidence.rollout).toBe('deployment "sllbr-gw" exceeded its progress deadline');
    expect(writes(stuck.requests)).toEqual([]);
  });

  it('invalid parameters, a name collision, not ours, and a Gateway not yet reconciled: explain and plan', async () => {
    await installController();
    await createClass(`other-${w.ns()}`, 'example.com/another-controller');
    await createGateway(w.ns(), 'invalid', w.cls(), 'missing');
    expect((await reconcile(w.key('invalid'), deps())).outcome).toBe('invalid');
    await createConfiguration(w.ns(), 'cfg');
    await createGateway(w.ns(), 'collided', w.cls(), 'cfg');
    await apps().createNamespacedDeployment({ namespace: w.ns(), body: { metadata: { name: 'sllbr-collided' }, spec: { replicas: 0, selector: { matchLabels: { app: 'x' } }, template: { metadata: { labels: { app: 'x' } }, spec: { containers: [{ name: 'x', image: 'x' }] } } } } });
    expect((await reconcile(w.key('collided'), deps())).outcome).toBe('collision');
    await createGateway(w.ns(), 'theirs', `other-${w.ns()}`, 'cfg');
    await createGateway(w.ns(), 'fresh', w.cls(), 'cfg');

    const all = await requestsOf(async () => Promise.all(['invalid', 'collided', 'theirs', 'fresh'].map((name) => explainGateway(ctx(), { name, ...where() }))));
    const [invalid, collided, theirs, fresh] = all.value;
    expect(invalid?.state).toBe('invalid');
    expect(invalid?.sentence).toMatch(new RegExp(`^Gateway ${w.ns()}/invalid is not accepted for \\d+s: .*missing.*; no LB Deployment of this Gateway runs$`));
    expect(collided?.sentence).toBe(`Gateway ${w.ns()}/collided is not programmed: Deployment ${w.ns()}/sllbr-collided exists but is controlled by no controller, not by this Gateway; it is not adopted or changed`);
    expect(theirs?.sentence).toBe(`Gateway ${w.ns()}/theirs is not reconciled by ${CONTROLLER_NAME}: its GatewayClass other-${w.ns()} belongs to controller example.com/another-controller`);
    expect(fresh?.state).toBe('not-reconciled');
    expect(writes(all.requests)).toEqual([]);
    expect(denied(all.requests)).toEqual([]);

    const plan = await requestsOf(() => planGateways(ctx(), { ...where() }));
    // Only this controller's Gateways, in name order.
    expect(plan.value.gateways.map((g) => [g.gateway, g.verdict, g.rolls])).toEqual([
      [`${w.ns()}/collided`, 'collision', false],
      [`${w.ns()}/fresh`, 'create', false],
      [`${w.ns()}/invalid`, 'invalid', false],
    ]);
    expect(plan.value.gateways[2]?.message).toMatch(/^not accepted: .*missing/);
    expect((await runPlan(ctx(), { ...where(), name: 'theirs' })).text).toMatch(new RegExp(`^${w.ns()}/theirs\\s+not ours\\s+no`, 'm'));
    expect(writes(plan.requests)).toEqual([]);
    // The install (2), the Gateways and classes (2 lists), observe per Gateway planned (5 each).
    expect(plan.requests.length).toBeLessThanOrEqual(2 + 2 + 5 * plan.value.gateways.length);

    // An install that serves other namespaces: none of these is planned.
    await installController({ WATCH_NAMESPACES: 'elsewhere' });
    const elsewhere = await runPlan(ctx(), { ...where() });
    expect([elsewhere.exitCode, elsewhere.text.split('\n')[1]]).toEqual([0, `No Gateways of ${CONTROLLER_NAME}.`]);

    // A Gateway that is not there, and an install that is not there: clear errors.
    await expect(explainGateway(ctx(), { name: 'nope', ...where() })).rejects.toThrow(new VerbError(`Gateway ${w.ns()}/nope not found`));
    await expect(planGateways(ctx(), { controllerService: { namespace: w.ns(), name: 'nope' } })).rejects.toThrow(VerbError);
  });

  it('metadata only and a pod-template change from the configuration: plan on the live objects', async () => {
    await installController();
    await zeroScaleConfiguration();
    await createGateway(w.ns(), 'gw', w.cls(), 'cfg');
    await settledGateway('gw');
    await editSpec(GATEWAYS, w.ns(), 'gw', (s) => ({ ...s, listeners: [...(s.listeners as unknown[]), { name: 'second', port: 2, protocol: 'TCP' }] }));
    const meta = await runPlan(ctx('json'), { ...where(), name: 'gw' });
    expect(meta.exitCode).toBe(0);
    expect((JSON.parse(meta.text) as Awaited<ReturnType<typeof planGateways>>).gateways[0]).toMatchObject({ verdict: 'metadata-only', rolls: false, fields: ['metadata.annotations.meridio-2.nordix.org/applied-gateway-generation'] });
    await editSpec(GATEWAY_CONFIGURATIONS, w.ns(), 'cfg', (s) => ({ ...s, networkAttachments: [{ type: 'NAD', nad: { name: 'other-net', namespace: 'default', interface: 'net1' } }] }));
    const roll = await runPlan(ctx('yaml'), { ...where(), name: 'gw' });
    expect(roll.exitCode).toBe(1);
    expect(roll.text).toMatch(/verdict: pod-template-change/);
    expect(roll.text).toMatch(/- configuration/);
  });

  it('through the built plugin: the shipped reader role (its ClusterRole and Role) grants exactly what status, wait, explain and plan use', async () => {
    await installController({ LB_ROLLOUT_BUDGET: '1', LB_PDB_MAX_UNAVAILABLE: '1', WATCH_NAMESPACES: w.ns() }, NEXT);
    await zeroScaleConfiguration();
    for (const gw of ['g1', 'g2']) await createGateway(w.ns(), gw, w.cls(), 'cfg');
    // Routes admitted by a namespace selector: observe lists the namespaces.
    await editSpec(GATEWAYS, w.ns(), 'g1', (s) => ({ ...s, listeners: [{ name: 'selected', port: 1, protocol: 'TCP', allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { team: 'a' } } } } }] }));
    for (const gw of ['g1', 'g2']) await settledGateway(gw);
    await scale('g1', 1);
    expect(await reconcile(w.key('g1'), deps(NEXT, { rolloutBudget: 1 }))).toMatchObject({ outcome: 'applied', deploymentWritten: true });
    await until('sllbr-g1 rolling', async () => (await progressing('g1')) !== 'NewReplicaSetAvailable');
    expect(await reconcile(w.key('g2'), deps(NEXT, { rolloutBudget: 1 }))).toMatchObject({ outcome: 'rollout-queued' });

    const at = ['--controller-namespace', w.ns()];
    const { value: runs, requests } = await requestsOf(async () => ({
      explain: await kubectlMeridio(['explain', 'g2', '-n', w.ns(), ...at], reader.kubeconfig),
      plan: await kubectlMeridio(['plan', '-n', w.ns(), ...at], reader.kubeconfig),
      statusAll: await kubectlMeridio(['status', '-A', ...at], reader.kubeconfig),
      statusOne: await kubectlMeridio(['status', 'g1', '-n', w.ns(), ...at], reader.kubeconfig),
      wait: await kubectlMeridio(['wait', 'g1', '--for=applied', '--timeout=30s', '-n', w.ns(), ...at], reader.kubeconfig),
      missing: await kubectlMeridio(['plan', '-n', w.ns(), ...at, '--template', join(scratch, 'no-such-file.yaml')], reader.kubeconfig),
    }));
    expect(runs.explain).toMatchObject({ code: 0, stderr: '' });
    expect(runs.explain.stdout.split('\n')[0]).toMatch(/its LB rollout waits for the rollout budget \(1 at once\), #1 in line/);
    // Some LB Pods would roll (g2's): exit 1.
    expect(runs.plan).toMatchObject({ code: 1, stderr: '' });
    expect(runs.plan.stdout).toMatch(new RegExp(`^${w.ns()}/g2\\s+queued\\s+yes`, 'm'));
    for (const run of [runs.statusAll, runs.statusOne, runs.wait]) expect(run).toMatchObject({ code: 0, stderr: '' });
    // A user's error: one line, no stack, exit 3.
    expect(runs.missing.code).toBe(3);
    expect(runs.missing.stderr).toMatch(/^Error: --template .*no-such-file\.yaml: .*\n$/);

    const mine = requests.filter((e) => e.user.username === reader.username);
    expect(writes(mine)).toEqual([]);
    expect(denied(mine)).toEqual([]);
    const used = usedKeys(mine);
    const granted = new Set([...grantedKeys(shippedRbacDocument(PLUGIN_READER_RBAC_FILE, 'ClusterRole')), ...grantedKeys(shippedRbacDocument(PLUGIN_READER_RBAC_FILE, 'Role'))]);
    expect([...used].filter((u) => !granted.has(u)).sort()).toEqual([]);
    expect([...granted].filter((g) => !used.has(g)).sort()).toEqual([]);
  });
});
