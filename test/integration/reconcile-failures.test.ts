import { createServer } from 'node:net';
import { AdmissionregistrationV1Api, AppsV1Api } from '@kubernetes/client-node';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { APPLIED_CONFIGURATION_GENERATION } from '../../api/names.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { adminConfig, statusOf } from '../support/cluster.js';
import { freezeDeployments } from '../support/policies.js';
import { APPLIED, condition, editSpec, listEvents, rawDeployment, readGateway } from '../support/fixtures.js';
import type { Reconciler } from '../support/reconciler.js';
import { useWorld } from '../support/world.js';

// Failed Deployment writes: Programmed keeps telling the truth about what
// serves traffic, and GatewayConfigurationApplied says what did not arrive.

describe('reconcile when the Deployment write fails', () => {
  const w = useWorld('rf');
  const ns = w.ns;
  let r: Reconciler;
  beforeEach(() => {
    r = w.r();
  });
  const setup = (): Promise<void> => w.setup();

  it('the seed scenario: a denied Deployment update leaves Programmed alone and says the configuration was not applied', async () => {
    await setup();
    await reconcile({ namespace: ns(), name: 'gw' }, r.deps);
    const before = await readGateway(ns(), 'gw');
    const deploymentBefore = await rawDeployment(ns(), 'sllbr-gw');
    const freeze = await freezeDeployments(ns(), 'sllbr-gw');
    const denial = freeze.message;
    try {
      await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
      const res = await reconcile({ namespace: ns(), name: 'gw' }, r.deps);
      expect(res.outcome).toBe('write-failed');
      expect(res.next).toBe('redeliver');
      expect(res.error?.code).toBe(422);

      const gw = await readGateway(ns(), 'gw');
      expect(condition(gw, 'Programmed')).toEqual(condition(before, 'Programmed'));
      expect(condition(gw, 'Accepted')).toEqual(condition(before, 'Accepted'));
      const applied = condition(gw, APPLIED);
      expect(applied).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
      expect(applied?.message).toContain('generation 1');
      expect(applied?.message).toContain('generation 2');
      expect(applied?.message).toContain(denial);
      const after = await rawDeployment(ns(), 'sllbr-gw');
      expect(after.spec).toEqual(deploymentBefore.spec);
      expect(after.metadata.annotations).toEqual(deploymentBefore.metadata.annotations);
      const warnings = (await listEvents(ns())).filter((e) => e.type === 'Warning' && e.reason === 'ApplyFailed');
      expect(warnings.length).toBe(1);
      expect(warnings[0]?.note).toContain(denial);
    } finally {
      await freeze.lift();
    }
    const healed = await waitFor('the update to go through once the policy is gone', async () => {
      const x = await reconcile({ namespace: ns(), name: 'gw' }, r.deps);
      return x.outcome === 'applied' ? x : undefined;
    }, { timeoutMs: 30000, intervalMs: 300 });
    expect(healed.next).toBe('settle');
    const gw = await readGateway(ns(), 'gw');
    expect(condition(gw, APPLIED)).toMatchObject({ status: 'True', reason: 'Applied' });
    expect(condition(gw, 'Programmed')?.message).toContain('generation 2');
    expect((await rawDeployment(ns(), 'sllbr-gw')).metadata.annotations![APPLIED_CONFIGURATION_GENERATION]).toBe('2');
  });

  it('a webhook that keeps failing (500) is transient: 503, Applied=False with the error, Programmed untouched', async () => {
    await setup();
    await reconcile(w.key(), r.deps);
    const before = await readGateway(ns(), 'gw');
    // A port that was free a moment ago and now refuses connections.
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const a = srv.address();
        srv.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
      });
    });
    const adm = adminConfig().makeApiClient(AdmissionregistrationV1Api);
    const name = `broken-${ns()}`;
    await adm.createValidatingWebhookConfiguration({
      body: {
        metadata: { name },
        webhooks: [{
          name: 'broken.meridio-2.test',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          timeoutSeconds: 2,
          clientConfig: { url: `https://127.0.0.1:${port}/validate` },
          rules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['deployments'] }],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns() } },
        }],
      },
    });
    try {
      const apps = adminConfig().makeApiClient(AppsV1Api);
      await waitFor('the webhook to be called', async () => {
        const live = await apps.readNamespacedDeployment({ namespace: ns(), name: 'sllbr-gw' });
        live.spec!.minReadySeconds = 7;
        return (await statusOf(apps.replaceNamespacedDeployment({ namespace: ns(), name: 'sllbr-gw', body: live, dryRun: 'All' }))) === 500 ? true : undefined;
      }, { timeoutMs: 30000, intervalMs: 200 });
      await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 4, enforceReplicas: true } }));
      const res = await reconcile(w.key(), r.deps);
      expect(res).toMatchObject({ outcome: 'write-failed', next: 'redeliver', deploymentWritten: false, statusWritten: true });
      expect(res.error).toMatchObject({ class: 'transient', code: 500 });
      const gw = await readGateway(ns(), 'gw');
      expect(condition(gw, 'Programmed')).toEqual(condition(before, 'Programmed'));
      expect(condition(gw, APPLIED)).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
      expect(condition(gw, APPLIED)?.message).toContain('failed calling webhook');
      // Retried many times, the failure stays one Event whose series counts.
      for (let i = 0; i < 3; i++) await reconcile(w.key(), r.deps);
      const failures = (await listEvents(ns())).filter((e) => e.reason === 'ApplyFailed');
      expect(failures.length).toBe(1);
      expect(failures[0]?.series?.count).toBe(4);
    } finally {
      await adm.deleteValidatingWebhookConfiguration({ name });
    }
  });
});
