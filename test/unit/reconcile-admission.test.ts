// Mutating admission against the planner: the server's answer to our write
// differs from the render (an image mirror, an added Pod annotation, a fought
// replica count). The planner records the admitted form once and then stays
// quiet, yet still corrects a person's edit of an owned field.
import { ADMITTED_SPEC_ANNOTATION } from '../../api/names.js';
import { planStatus } from '../../functions/reconcile/plan/plan.js';
import type { SettledPlan } from '../../functions/reconcile/plan/plan-types.js';
import { DeploymentSchema, type Deployment } from '../../api/schemas.js';
import { LATER, gatewayConfiguration, observed, simulateServer, withStatus, plan, type Scenario } from './reconcile-fixtures.js';

type Admission = (d: Deployment) => Deployment;

const mirrorImages: Admission = (d) => {
  const out = structuredClone(d);
  for (const c of out.spec.template.spec.containers) {
    const image = c.image ?? '';
    if (!image.startsWith('mirror.local/')) c.image = `mirror.local/${image.split('/').slice(1).join('/')}`;
  }
  out.spec.template.metadata = {
    ...out.spec.template.metadata,
    annotations: { ...out.spec.template.metadata?.annotations, 'policy.example/mirrored': 'true' },
  };
  return DeploymentSchema.parse(out);
};

let rv = 5000;
// The server: defaults first, then admission; a write that changes nothing
// in the spec keeps the generation.
function store(body: Deployment, previous: Deployment | null, admit: Admission): Deployment {
  return admit(simulateServer(body, previous, String((rv += 1))));
}

/** One invocation with the I/O layer's contract, including the follow-up record write. */
function run(o: Scenario, admit: Admission) {
  const first = plan(o);
  let final: SettledPlan;
  let deployment = o.deployment;
  let writes = 0;
  if (first.outcome === 'needs-write') {
    deployment = store(first.deployment.object, o.deployment, admit);
    writes += 1;
    final = planStatus(first.pending, { ok: true, written: deployment });
  } else {
    final = first;
  }
  if (final.deployment.action === 'record-admission' && deployment) {
    // A metadata-only merge patch: the spec, and so the generation, stay.
    const patched = structuredClone(deployment);
    patched.metadata.annotations = { ...patched.metadata.annotations, ...final.deployment.annotations };
    patched.metadata.resourceVersion = String((rv += 1));
    deployment = patched;
    writes += 1;
  }
  const gateway = o.gateway && final.statusChanged ? withStatus(o.gateway, final.status) : o.gateway;
  return { first, final, writes, next: { ...o, gateway, deployment, now: LATER } };
}

describe('mutating admission', () => {
  it('converges in two writes (the render, then the record), then writes nothing', () => {
    const created = run(observed(), mirrorImages);
    expect(created.writes).toBe(2);
    expect(created.final.deployment.action).toBe('record-admission');
    const event = created.final.events.find((e) => e.reason === 'MutatedByAdmission');
    expect(event?.note).toContain('spec.template.spec.containers[router].image');
    expect(event?.note).toContain('spec.template.spec.containers[stateless-lb].image');
    expect(created.next.deployment?.metadata.annotations?.[ADMITTED_SPEC_ANNOTATION]).toMatch(/^[0-9a-f]{16}\.[0-9a-f]{16}$/);

    let o = created.next;
    for (let i = 0; i < 3; i++) {
      const again = run(o, mirrorImages);
      expect(again.first.deployment).toEqual({ action: 'none' });
      expect(again.writes).toBe(0);
      expect(again.final.statusChanged).toBe(false);
      expect(again.final.events).toEqual([]);
      o = again.next;
    }
  });

  it('without the record every reconcile would write (the loop this prevents)', () => {
    const created = run(observed(), mirrorImages);
    const deployment = structuredClone(created.next.deployment as Deployment);
    delete deployment.metadata.annotations?.[ADMITTED_SPEC_ANNOTATION];
    expect(plan({ ...created.next, deployment }).deployment.action).toBe('update');
  });

  it('a person changing an owned field is corrected, and the new admitted form recorded', () => {
    const settled = run(observed(), mirrorImages).next;
    const edited = structuredClone(settled.deployment as Deployment);
    const router = edited.spec.template.spec.containers.find((c) => c.name === 'router');
    if (!router) throw new Error('fixture: no router');
    router.image = 'someone/else:latest';
    edited.metadata.generation = (edited.metadata.generation ?? 0) + 1;
    const fixed = run({ ...settled, deployment: edited }, mirrorImages);
    expect(fixed.first.deployment.action).toBe('update');
    const image = fixed.next.deployment?.spec.template.spec.containers.find((c) => c.name === 'router')?.image;
    expect(image).toBe('mirror.local/router:1');
    expect(run(fixed.next, mirrorImages).writes).toBe(0);
  });

  it('new inputs are written even when the record matches the live spec', () => {
    const settled = run(observed(), mirrorImages).next;
    const edited = run({ ...settled, gatewayConfiguration: gatewayConfiguration({ horizontalScaling: { replicas: 3, enforceReplicas: true } }, { generation: 2 }) }, mirrorImages);
    expect(edited.first.deployment.action).toBe('update');
    expect(edited.next.deployment?.spec.replicas).toBe(3);
  });

  it('admission fighting an enforced replica count: one Event per write, not a write loop', () => {
    const capReplicas: Admission = (d) => DeploymentSchema.parse({ ...structuredClone(d), spec: { ...d.spec, replicas: 1 } });
    const config = gatewayConfiguration({ horizontalScaling: { replicas: 2, enforceReplicas: true } });
    const created = run(observed({ gatewayConfiguration: config }), capReplicas);
    expect(created.final.events.find((e) => e.reason === 'MutatedByAdmission')?.note).toContain('spec.replicas');
    const again = run(created.next, capReplicas);
    expect(again.writes).toBe(0);
    expect(again.final.events).toEqual([]);
  });

  it('no admission: one write and no record', () => {
    const created = run(observed(), (d) => d);
    expect(created.writes).toBe(1);
    expect(created.final.deployment).toEqual({ action: 'none' });
    expect(created.next.deployment?.metadata.annotations?.[ADMITTED_SPEC_ANNOTATION]).toBeUndefined();
  });
});
