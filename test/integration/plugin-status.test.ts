import { AppsV1Api } from '@kubernetes/client-node';
import { load } from 'js-yaml';
import { WRITE_VERBS, deniedByAuthorizer, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import { shippedClusterRole } from '../../tools/harness/service-account-identity.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { reconcile, type ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import { adminConfig, auditLog } from '../support/cluster.js';
import { configurationSpec, createClass, createConfiguration, createGateway, editDeployment, editSpec, readDeployment } from '../support/fixtures.js';
import { kubectlMeridio, pluginReader, PLUGIN_READER_RBAC_FILE, tableRows, type PluginRun } from '../support/kubectl-meridio.js';
import { freezeDeployments } from '../support/policies.js';
import { grantedKeys, usedKeys } from '../support/rbac-usage.js';
import { useWorld } from '../support/world.js';
import type { ServiceAccountIdentity } from '../../tools/harness/service-account-identity.js';

// `kubectl meridio status` and `wait` (issue 42) on the real API server,
// with the real Deployment controller, for each state a Gateway can be in;
// the plugin runs as its own process (the built entry) as an identity bound
// to the shipped read-only ClusterRole only, and the audit log shows it
// wrote nothing and used exactly what the role grants. The shared control
// plane has no Node: an LB Pod never runs, so a Deployment at 1 replica or
// more keeps rolling and one at 0 settles at once.

const APPLIED_MARK = '✓';

describe('kubectl meridio status and wait, as the plugin reader', () => {
  const w = useWorld('plugin');
  let reader: ServiceAccountIdentity;
  let window: Awaited<ReturnType<ReturnType<typeof auditLog>['begin']>>;
  beforeEach(async () => {
    reader = await pluginReader(w.ns());
    window = await auditLog().begin();
  });
  /** Every request the reader made in this test. */
  const readerRequests = async (): Promise<AuditEvent[]> => (await window.end()).filter((e) => e.user.username === reader.username);
  afterEach(async () => {
    // Read-only, whatever the test did: no write, nothing refused by RBAC.
    const mine = await readerRequests();
    expect(mine.filter((e) => WRITE_VERBS.includes(e.verb)).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    expect(mine.filter(deniedByAuthorizer).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  });

  const plugin = (...args: string[]): Promise<PluginRun> => kubectlMeridio(args, reader.kubeconfig);
  const rowsOf = async (...args: string[]): Promise<Record<string, string>[]> => {
    const run = await plugin('status', '-n', w.ns(), ...args);
    expect(run.stderr).toBe('');
    expect(run.stdout.split('\n')[0]).toMatch(/^Controller \(meridio-2-system\): Service meridio-2-gateway-controller/);
    return tableRows(run.stdout);
  };
  const row = async (name: string): Promise<Record<string, string> | undefined> => (await rowsOf()).find((r) => r.NAME === name);
  const apps = (): AppsV1Api => adminConfig().makeApiClient(AppsV1Api);

  it('applied: ✓ and the generation; --exit-code 0; wait returns at once; -o json carries the same row', async () => {
    await w.setup();
    expect(await reconcile(w.key(), w.r().deps)).toMatchObject({ outcome: 'applied' });
    expect(await row('gw')).toEqual({ NAME: 'gw', ACCEPTED: 'True', PROGRAMMED: 'True', APPLIED: `1/1 ${APPLIED_MARK}`, LB: '0/2', ROLLOUT: 'rolling', AGE: expect.stringMatching(/^\d+s$/) });
    expect((await plugin('status', '-n', w.ns(), '--exit-code')).code).toBe(0);
    const waited = await plugin('wait', 'gw', '--for=applied', '--timeout=30s', '-n', w.ns());
    expect(waited).toMatchObject({ code: 0, stdout: `Gateway ${w.ns()}/gw: GatewayConfiguration cfg generation 1 applied\n` });
    const doc = JSON.parse((await plugin('status', 'gw', '-n', w.ns(), '-o', 'json')).stdout) as { gateways: unknown[]; controller: { parts: unknown[] } };
    expect(doc.gateways).toEqual([expect.objectContaining({ namespace: w.ns(), name: 'gw', configuration: 'cfg', applied: expect.objectContaining({ generation: 1, latest: 1, ok: true }), lb: { available: 0, desired: 2 }, rollout: { state: 'rolling' } })]);
    expect(doc.controller.parts).toHaveLength(6);
    // -o yaml is the same document.
    const yaml = load((await plugin('status', 'gw', '-n', w.ns(), '-o', 'yaml')).stdout) as typeof doc;
    expect({ ...yaml, gateways: yaml.gateways.map((g) => ({ ...(g as object), age: '' })) }).toEqual({ ...doc, gateways: doc.gateways.map((g) => ({ ...(g as object), age: '' })) });
  });

  it('apply failed (a denying ValidatingAdmissionPolicy): the old generation and ApplyFailed; --exit-code 1; wait times out saying why', async () => {
    await w.setup();
    await reconcile(w.key(), w.r().deps);
    const freeze = await freezeDeployments(w.ns(), 'sllbr-gw', 'LB Deployments are frozen for the audit');
    try {
      await editSpec(GATEWAY_CONFIGURATIONS, w.ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
      expect((await reconcile(w.key(), w.r().deps)).outcome).toBe('write-failed');
      expect(await row('gw')).toMatchObject({ ACCEPTED: 'True', PROGRAMMED: 'True', APPLIED: '1/2 ApplyFailed', LB: '0/2' });
      expect((await plugin('status', '-n', w.ns(), '--exit-code')).code).toBe(1);
      const waited = await plugin('wait', 'gw', '--for=applied', '--timeout=1s', '-n', w.ns());
      expect(waited).toMatchObject({ code: 1, stdout: '' });
      expect(waited.stderr).toContain(`Error: timed out after 1s waiting for Gateway ${w.ns()}/gw to have its latest configuration applied: APPLIED 1/2 ApplyFailed, ROLLOUT rolling: `);
      expect(waited.stderr).toContain('LB Deployments are frozen for the audit');
    } finally {
      await freeze.lift();
    }
  });

  it('retries exhausted: RetriesExhausted, the old generation kept', async () => {
    await w.setup();
    await reconcile(w.key(), w.r().deps);
    const freeze = await freezeDeployments(w.ns(), 'sllbr-gw');
    try {
      await editSpec(GATEWAY_CONFIGURATIONS, w.ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
      await reconcile(w.key(), w.r().deps, { retriesExhausted: { message: 'event dead-lettered after 6 attempts' } });
      expect(await row('gw')).toMatchObject({ APPLIED: '1/2 RetriesExhausted', LB: '0/2' });
    } finally {
      await freeze.lift();
    }
  });

  it('queued behind a rollout (LB_ROLLOUT_BUDGET=1): the slot holder rolling, the others queued #1 and #2 in line order', async () => {
    const budgeted: ReconcileDeps = { ...w.r().deps, settings: { ...w.r().deps.settings, rolloutBudget: 1 }, namespaces: [w.ns()] };
    await createConfiguration(w.ns(), 'cfg', configurationSpec({ horizontalScaling: { replicas: 1, enforceReplicas: false } }));
    for (const name of ['g1', 'g2', 'g3']) await createGateway(w.ns(), name, w.cls(), 'cfg');
    for (const name of ['g1', 'g2', 'g3']) await reconcile({ namespace: w.ns(), name }, budgeted);
    // g1 stays at 1 replica (its rollout never completes: it holds the
    // slot); g2 and g3 scale to 0, as an HPA would, and settle.
    for (const name of ['g2', 'g3']) {
      await apps().replaceNamespacedDeploymentScale({ namespace: w.ns(), name: `sllbr-${name}`, body: { metadata: { name: `sllbr-${name}`, namespace: w.ns() }, spec: { replicas: 0 } } });
      await waitFor(`sllbr-${name} settled at 0 replicas`, async () => {
        const d = await readDeployment(w.ns(), `sllbr-${name}`);
        return (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) && (d.status?.replicas ?? 0) === 0 && d.status?.conditions?.some((c) => c.reason === 'NewReplicaSetAvailable') ? true : undefined;
      }, { timeoutMs: 30_000, intervalMs: 100 });
    }
    // A pod-template change for all three: another interface name in the networks annotation.
    await editSpec(GATEWAY_CONFIGURATIONS, w.ns(), 'cfg', (s) => ({ ...s, networkAttachments: [{ type: 'NAD', nad: { name: 'app-net', namespace: 'default', interface: 'net2' } }] }));
    expect(await reconcile({ namespace: w.ns(), name: 'g1' }, budgeted)).toMatchObject({ outcome: 'applied' });
    for (const name of ['g3', 'g2']) expect(await reconcile({ namespace: w.ns(), name }, budgeted)).toMatchObject({ outcome: 'rollout-queued' });

    const rows = await rowsOf();
    expect(rows.map((r) => [r.NAME, r.APPLIED, r.LB, r.ROLLOUT])).toEqual([
      ['g1', `2/2 ${APPLIED_MARK}`, '0/1', 'rolling'],
      ['g2', '1/2 RolloutQueued', '0/0', 'queued #1'],
      ['g3', '1/2 RolloutQueued', '0/0', 'queued #2'],
    ]);
    // One Gateway by name reads the cluster-wide line to place it.
    expect(tableRows((await plugin('status', 'g3', '-n', w.ns())).stdout).map((r) => r.ROLLOUT)).toEqual(['queued #2']);
  });

  it('stuck rollout: the Deployment controller says the progress deadline passed', async () => {
    await w.setup();
    await reconcile(w.key(), w.r().deps);
    await editDeployment(w.ns(), 'sllbr-gw', (d) => ({ ...d, spec: { ...d.spec!, progressDeadlineSeconds: 1 } }));
    await waitFor('the rollout to be past its progress deadline', async () => {
      const d = await readDeployment(w.ns(), 'sllbr-gw');
      return d.status?.conditions?.some((c) => c.type === 'Progressing' && c.reason === 'ProgressDeadlineExceeded') ? true : undefined;
    }, { timeoutMs: 30_000, intervalMs: 200 });
    expect(await row('gw')).toMatchObject({ APPLIED: `1/1 ${APPLIED_MARK}`, LB: '0/2', ROLLOUT: 'stuck' });
  });

  it('invalid parameters: not accepted, nothing to apply, no LB', async () => {
    await createGateway(w.ns(), 'gw', w.cls(), 'missing');
    expect((await reconcile(w.key(), w.r().deps)).outcome).toBe('invalid');
    expect(await row('gw')).toMatchObject({ ACCEPTED: 'False/InvalidParameters', PROGRAMMED: 'False/Invalid', APPLIED: '-/- Pending', LB: '-', ROLLOUT: '-' });
    const wide = tableRows((await plugin('status', '-n', w.ns(), '-o', 'wide')).stdout)[0];
    expect(wide?.MESSAGE).toContain('missing');
    expect((await plugin('status', '-A')).code).toBe(0);
    // The lists covered the namespace: no get looks again for what they did not find.
    expect((await readerRequests()).filter((e) => e.verb === 'get' && e.objectRef?.resource === 'gatewayconfigurations').map((e) => e.requestURI)).toEqual([]);
    window = await auditLog().begin();
    // By name nothing was listed: one get, which finds nothing either.
    expect(await plugin('status', 'gw', '-n', w.ns())).toMatchObject({ code: 0 });
    expect((await readerRequests()).filter((e) => e.verb === 'get' && e.objectRef?.resource === 'gatewayconfigurations').map((e) => e.objectRef?.name)).toEqual(['missing']);
    window = await auditLog().begin();
  });

  it('name collision: a Deployment of the name this Gateway does not control counts for nothing', async () => {
    await apps().createNamespacedDeployment({
      namespace: w.ns(),
      body: {
        metadata: { name: 'sllbr-gw' },
        spec: { replicas: 1, selector: { matchLabels: { x: 'y' } }, template: { metadata: { labels: { x: 'y' } }, spec: { containers: [{ name: 'c', image: 'example.invalid/c:1' }] } } },
      },
    });
    await w.setup();
    expect((await reconcile(w.key(), w.r().deps)).outcome).toBe('collision');
    expect(await row('gw')).toMatchObject({ ACCEPTED: 'True', PROGRAMMED: 'False/Invalid', APPLIED: '-/1 ApplyFailed', LB: '-', ROLLOUT: '-' });
    expect((await plugin('status', 'gw', '-n', w.ns(), '--exit-code')).code).toBe(1);
  });

  it('not ours: no row; by name, exit 3 and whose class it is', async () => {
    const other = `other-${w.ns()}`;
    await createClass(other, 'example.com/another-controller');
    await createConfiguration(w.ns(), 'cfg');
    await createGateway(w.ns(), 'theirs', other, 'cfg');
    expect(await rowsOf()).toEqual([]);
    const byName = await plugin('status', 'theirs', '-n', w.ns());
    expect(byName).toMatchObject({ code: 3, stdout: '' });
    expect(byName.stderr).toBe(`Error: Gateway ${w.ns()}/theirs is not a Gateway of meridio-2.nordix.org/gateway-controller: its GatewayClass is ${other}, whose controllerName is example.com/another-controller\n`);
    expect(await plugin('status', 'nosuch', '-n', w.ns())).toMatchObject({ code: 3, stderr: `Error: Gateway ${w.ns()}/nosuch not found\n` });
  });

  it('no Gateways: says so, exit 0 even with --exit-code', async () => {
    const run = await plugin('status', '-n', w.ns(), '--exit-code');
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n').slice(1).join('\n')).toBe(`\nNo Gateways of a GatewayClass with controllerName meridio-2.nordix.org/gateway-controller in namespace ${w.ns()}.\n`);
  });

  it('bad input: one line and exit 2, no request made', async () => {
    const run = await plugin('status', '-o', 'name');
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toBe("Error: -o name: expected one of wide, json, yaml\nRun 'kubectl meridio --help' for usage.\n");
    expect(await readerRequests()).toEqual([]);
    window = await auditLog().begin();
  });

  // That the role grants nothing more than the four verbs use, with
  // explain's and plan's Role: test/integration/kubectl-explain-plan.test.ts.
  it('status and wait use nothing the reader role does not grant', async () => {
    await w.setup();
    await reconcile(w.key(), w.r().deps);
    for (const args of [['status', '-A'], ['status', 'gw', '-n', w.ns()], ['wait', 'gw', '--for=applied', '-n', w.ns()]]) expect((await plugin(...args)).code).toBe(0);
    const used = usedKeys(await readerRequests());
    window = await auditLog().begin();
    const granted = grantedKeys(shippedClusterRole(PLUGIN_READER_RBAC_FILE));
    expect([...used].filter((u) => !granted.has(u)).sort()).toEqual([]);
  });
});
