// What the next reconcile would write for one Gateway, as `kubectl meridio
// plan` reports it: the function's own pure planner (plan.ts) run on the
// observed objects with a template and settings, and its answer sorted into
// a verdict. Pure. A pod-template change says which fields and why: the
// LB template changed, the configuration or the Gateway did, or neither
// (the same inputs render differently in this build: a new default, or a
// hand edit of the Deployment that the reconcile puts back).
import { CONDITION_ACCEPTED } from '../../api/names.js';
import type { Deployment } from '../../api/schemas.js';
import { currentState, readAppliedState } from '../../functions/reconcile/plan/applied-annotations.js';
import { findCondition } from '../../functions/reconcile/plan/conditions.js';
import { differingPaths } from '../../functions/reconcile/plan/deployment-diff.js';
import { plan } from '../../functions/reconcile/plan/plan.js';
import type { Observed, PlanInput, Planned, Queued } from '../../functions/reconcile/plan/plan-types.js';
import { pdbAction } from '../../functions/reconcile/plan/render-pdb.js';
import { changesPodTemplate, rolloutBudget } from '../../functions/reconcile/plan/rollout-budget.js';
import { describeApplied } from '../../functions/reconcile/plan/status-decisions.js';

export type VerdictKind = 'nothing' | 'metadata-only' | 'create' | 'pod-template-change' | 'queued' | 'invalid' | 'collision' | 'not-ours' | 'deleted';

/** Why the pod template changes. */
export type RollCause = 'template' | 'configuration' | 'gateway' | 'new-default';

export interface Verdict {
  gateway: string;
  verdict: VerdictKind;
  /** The LB Pods would be replaced (now, or once the budget lets it). */
  rolls: boolean;
  /** The fields the Deployment write changes (spec.template.… for a roll). */
  fields: string[];
  causes: RollCause[];
  /** One line an operator reads. */
  message: string;
  /** The Gateway's status would be written too. */
  statusWrite: boolean;
  /** The LB PodDisruptionBudget's write (LB_PDB_MAX_UNAVAILABLE), if any. */
  pdb: 'none' | 'create' | 'update' | 'collision';
}

const refOf = (m: { namespace?: string | undefined; name: string }): string => `${m.namespace ?? ''}/${m.name}`;

/** The fields `body` changes on `live`, pod template and the rest. */
export function changedFields(live: Deployment, body: Deployment): string[] {
  const template = differingPaths(body.spec.template, live.spec.template, 'spec.template');
  const { template: _b, ...bodySpec } = body.spec;
  const { template: _l, ...liveSpec } = live.spec;
  return [...differingPaths(body.metadata, live.metadata, 'metadata'), ...differingPaths(bodySpec, liveSpec, 'spec'), ...template];
}

const CAUSE_TEXT: Record<RollCause, string> = {
  template: 'the LB template changed',
  configuration: 'the GatewayConfiguration changed',
  gateway: 'the Gateway changed',
  'new-default': 'the same inputs render differently (a new default of this build, or a hand edit put back)',
};

function causes(observed: Observed, input: PlanInput, live: Deployment): RollCause[] {
  const recorded = readAppliedState(live);
  const { gateway, gatewayConfiguration } = observed;
  if (recorded === null || gateway === null || gatewayConfiguration === null) return ['new-default'];
  const current = currentState(gateway, gatewayConfiguration, input.template.hash);
  const out: RollCause[] = [];
  if (recorded.templateHash !== current.templateHash) out.push('template');
  if (recorded.configurationName !== current.configurationName || recorded.configurationUid !== current.configurationUid || recorded.configurationGeneration !== current.configurationGeneration) out.push('configuration');
  if (recorded.gatewayGeneration !== current.gatewayGeneration) out.push('gateway');
  return out.length > 0 ? out : ['new-default'];
}

function queuedText(q: Queued): string {
  const held = q.held.length === 0 ? 'no slot held' : `slots held by ${q.held.map((h) => `${h.ref} (${h.state})`).join(', ')}`;
  return `queued by the rollout budget (${q.budget} at once): ${held}, ${q.ahead.length} Gateway${q.ahead.length === 1 ? '' : 's'} before it`;
}

/**
 * The verdict from the observed objects, or a request for the rollout
 * census (observed.rollouts), which the planner asks for only for a
 * pod-template change with the budget on.
 */
export function planVerdict(observed: Observed, input: PlanInput, now: string): Verdict | { needsCensus: true } {
  const planned: Planned = plan(observed, input, now);
  if (planned.outcome === 'needs-reads') return { needsCensus: true };
  const { gateway, deployment } = observed;
  const ref = gateway ? refOf(gateway.metadata) : `${observed.key.namespace}/${observed.key.name}`;
  const setting = input.settings.lbPodDisruptionBudget;
  const pdb = gateway && setting !== undefined && planned.outcome !== 'not-ours' ? pdbAction(gateway, deployment, observed.pdb ?? null, setting).action : 'none';
  const statusWrite = planned.outcome === 'needs-write' ? true : planned.statusChanged;
  const v = (verdict: VerdictKind, message: string, rest: Partial<Pick<Verdict, 'fields' | 'causes' | 'rolls'>> = {}): Verdict => ({ gateway: ref, verdict, rolls: false, fields: [], causes: [], message, statusWrite, pdb, ...rest });
  switch (planned.outcome) {
    case 'not-found':
      return v('deleted', 'being deleted: the garbage collector removes its LB Deployment');
    case 'not-ours':
      return v('not-ours', `its GatewayClass ${gateway?.spec.gatewayClassName ?? ''} is not ${input.settings.controllerName}'s: nothing is written${planned.statusChanged ? ' but the Accepted condition we wrote is taken back' : ''}`);
    case 'invalid': {
      const accepted = findCondition(planned.status?.conditions ?? [], CONDITION_ACCEPTED);
      return v('invalid', `not accepted: ${accepted?.message ?? 'invalid parameters'}; nothing is written to the Deployment`);
    }
    case 'collision':
      return v('collision', `Deployment ${observed.key.namespace}/${deployment?.metadata.name ?? ''} is not controlled by this Gateway: nothing is written`);
    case 'rollout-queued': {
      // The write the budget holds back: the same plan with no budget.
      const free = plan(observed, { ...input, settings: { ...input.settings, rolloutBudget: 0 } }, now);
      const fields = free.outcome === 'needs-write' && deployment ? changedFields(deployment, free.deployment.object).filter((f) => f.startsWith('spec.template')) : [];
      const budget = input.settings.rolloutBudget ?? 0;
      const line = gateway && observed.rollouts ? rolloutBudget(gateway, budget, observed.rollouts, { templateHash: input.template.hash, configuration: observed.gatewayConfiguration }, input.settings.controllerName) : { go: false, held: [], ahead: [] };
      const queued = queuedText({ ...line, budget });
      const why = deployment ? causes(observed, input, deployment) : [];
      return v('queued', `the LB Pods roll once the budget lets them (${why.map((c) => CAUSE_TEXT[c]).join('; ')}); ${queued}`, { rolls: true, fields, causes: why });
    }
    case 'needs-write': {
      const { action, object } = planned.deployment;
      if (action === 'create' || deployment === null) return v('create', `creates Deployment ${observed.key.namespace}/${object.metadata.name}`);
      const fields = changedFields(deployment, object);
      if (!changesPodTemplate(deployment, object)) return v('metadata-only', `writes ${fields.join(', ') || 'the Deployment'} without touching the pod template: no LB Pod is replaced`, { fields });
      const why = causes(observed, input, deployment);
      const podFields = fields.filter((f) => f.startsWith('spec.template'));
      return v('pod-template-change', `the LB Pods roll: ${podFields.join(', ')}; because ${why.map((c) => CAUSE_TEXT[c]).join('; ')} (Deployment records ${describeApplied(readAppliedState(deployment), observed.gatewayConfiguration)})`, { rolls: true, fields: podFields, causes: why });
    }
    default:
      return v('nothing', planned.statusChanged ? 'the Deployment is as rendered; only the Gateway status is written' : 'the Deployment is as rendered: nothing is written');
  }
}
