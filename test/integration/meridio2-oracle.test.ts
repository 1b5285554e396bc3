// Differential test against recorded Meridio-2 output, on the real API server
// with kube-controller-manager: every case folder of test/oracle/meridio2/ is
// played step by step, the function reconciles as its ServiceAccount under
// the shipped ClusterRole, and the stored Deployment, its ReplicaSets (the
// pod-template-hash: the same hash is the same pod template, so the same LB
// Pods) and the Gateway status are compared field by field with the
// recording. Differences must be on the allow-list
// (test/oracle/allowed-differences.ts). Steps in which Meridio-2 changed
// nothing (a no-op event) must cost the function no write at all.
import { countBy, WRITE_VERBS } from '../../tools/controlplane/audit-log.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { parseTemplate } from '../../functions/reconcile/template.js';
import { ALLOWED_DIFFERENCES } from '../oracle/allowed-differences.js';
import { compareStep } from '../oracle/compare.js';
import { oracleCases } from '../oracle/oracle-cases.js';
import { auditLog } from '../support/cluster.js';
import { applyOperation, deleteNamespaceAndWait, freshNamespace, readStep, settled } from '../support/oracle-world.js';
import { controllerIdentity } from '../support/reconciler.js';

const cases = oracleCases();

describe('Meridio-2 oracle (real API server)', () => {
  const used = new Set<string>();

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const { namespace, gateway } = c.inputs;
    await freshNamespace(namespace);
    try {
      const r = await controllerIdentity(namespace);
      const deps = {
        ...r.deps,
        template: parseTemplate(c.templateText, `${c.name}/template.yaml`),
        settings: { controllerName: c.inputs.controller.controllerName, lbServiceAccount: c.inputs.controller.lbServiceAccount },
      };
      const key = { namespace, name: gateway };
      for (const [i, step] of c.inputs.steps.entries()) {
        const recordedRequests = c.requests.steps[i];
        const window = await auditLog().begin();
        for (const op of step.operations) await applyOperation(op, namespace);
        await reconcile(key, deps);
        await settled(namespace, `sllbr-${gateway}`);
        // The Deployment's own events (kube-controller-manager's status writes) reconcile again.
        await reconcile(key, deps);
        await settled(namespace, `sllbr-${gateway}`);
        const events = await window.end();
        if (recordedRequests && !recordedRequests.timingDependent) {
          // Meridio-2 changed nothing in this step (it still sent writes: see bench/REPORT.md); neither do we.
          expect({ step: step.name, writes: countBy(events, { user: r.username, verb: WRITE_VERBS }) }).toEqual({ step: step.name, writes: {} });
        }
        const recorded = c.output.steps[i];
        if (!recorded) throw new Error(`${c.name}: no recorded step ${i}`);
        const { left, used: entries } = compareStep(await readStep(c), recorded, c.output.nondeterministic, 'server');
        for (const id of entries) used.add(id);
        expect({ case: c.name, step: step.name, unexplained: left }).toEqual({ case: c.name, step: step.name, unexplained: [] });
      }
    } finally {
      await deleteNamespaceAndWait(namespace);
    }
  });

  it('uses every allow-list entry meant for it (no dead entries)', () => {
    const meant = ALLOWED_DIFFERENCES.filter((a) => a.only !== 'planner').map((a) => a.id);
    expect([...used].sort()).toEqual(meant.sort());
  });
});
