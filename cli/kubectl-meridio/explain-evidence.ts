// The evidence under explain's sentence: each condition with its message,
// the applied-state annotations against the live inputs, the rollout
// (kubectl rollout status), the PodDisruptionBudget, the rollout budget's
// line, which routes attach and why the others do not, and the last
// Warnings. Pure; `renderExplain` is the text, the object itself is `-o json`.
import { z } from 'zod';
import type { PodDisruptionBudget } from '../../api/schemas.js';
import { isControlledBy } from '../../functions/reconcile/plan/render-deployment.js';
import { attachedListeners, namespaceLabels, parentRefNames } from '../../functions/reconcile/plan/route-attachment.js';
import { planRouteFeedback } from '../../functions/reconcile/plan/route-feedback.js';
import { age } from './age.js';
import type { Answer, ExplainFacts } from './explain-answer.js';
import { rolloutStatus } from './rollout-status.js';
import { textTable } from './text-table.js';
import { warningsAbout, type EventLine } from './warning-events.js';
import { deploymentName } from '../../functions/reconcile/plan/names.js';

/** Warnings shown: the last few tell the story; the rest is `kubectl events`. */
export const EVENTS_SHOWN = 5;

export interface Evidence {
  conditions: { type: string; status: string; reason: string; age: string | undefined; message: string }[];
  applied: { input: string; recorded: string; live: string; same: boolean }[];
  rollout: string;
  pdb: string;
  budget: string;
  routes: { route: string; attached: boolean; why: string }[];
  events: (EventLine & { age: string | undefined })[];
}

export interface ExplainFactsWithPdb extends ExplainFacts {
  /** undefined: PodDisruptionBudgets are off (LB_PDB_MAX_UNAVAILABLE empty); null: none. */
  pdb: PodDisruptionBudget | null | undefined;
}

const PdbStatusSchema = z.looseObject({ disruptionsAllowed: z.number().int().optional(), currentHealthy: z.number().int().optional(), desiredHealthy: z.number().int().optional() });

function pdbText(f: ExplainFactsWithPdb): string {
  if (f.pdb === undefined) return 'none: LB PodDisruptionBudgets are off (LB_PDB_MAX_UNAVAILABLE is empty)';
  if (f.pdb === null) return `none yet: LB_PDB_MAX_UNAVAILABLE is set, the next reconcile creates ${deploymentName(f.observed.gateway.metadata.name)}`;
  const s = PdbStatusSchema.safeParse(f.pdb.status ?? {});
  const st = s.success ? s.data : {};
  const limit = f.pdb.spec.maxUnavailable !== undefined ? `maxUnavailable ${f.pdb.spec.maxUnavailable}` : `minAvailable ${f.pdb.spec.minAvailable ?? '-'}`;
  const owner = (f.pdb.metadata.ownerReferences ?? []).some((o) => o.controller === true && o.uid === f.observed.gateway.metadata.uid) ? '' : ' (not controlled by this Gateway)';
  const allowed = st.disruptionsAllowed ?? 0;
  return `${f.pdb.metadata.name}${owner}: ${limit}; ${allowed} disruption${allowed === 1 ? '' : 's'} allowed, ${st.currentHealthy ?? 0} healthy of ${st.desiredHealthy ?? 0} needed`;
}

function budgetText(f: ExplainFacts, a: Answer): string {
  if (f.rolloutBudget <= 0) return 'off (LB_ROLLOUT_BUDGET=0): every LB rollout starts at once';
  const head = `LB_ROLLOUT_BUDGET=${f.rolloutBudget}`;
  if (a.line === undefined) return `${head}: this Gateway does not wait for it`;
  const held = a.line.held.length === 0 ? 'no slot held by another Deployment' : `slots held by ${a.line.held.map((h) => `${h.ref} (${h.state})`).join(', ')}`;
  const ahead = a.line.ahead.length === 0 ? 'first in line' : `#${a.line.ahead.length + 1} in line, after ${a.line.ahead.join(', ')}`;
  return `${head}: ${held}; ${ahead}`;
}

function routes(f: ExplainFacts): Evidence['routes'] {
  const { gateway } = f.observed;
  const labels = namespaceLabels(f.observed.namespaces);
  const why = new Map(planRouteFeedback(f.observed, f.controllerName).map((r) => [`${r.regarding.namespace}/${r.regarding.name}`, r.event]));
  return f.observed.routes
    .filter((r) => parentRefNames(r, gateway) !== null)
    .map((r) => {
      const ref = `${r.metadata.namespace ?? ''}/${r.metadata.name}`;
      const listeners = attachedListeners(r, gateway, labels);
      const refused = why.get(ref);
      return listeners.length > 0
        ? { route: ref, attached: true, why: `listener${listeners.length === 1 ? '' : 's'} ${listeners.map((l) => l.name).join(', ')}` }
        : { route: ref, attached: false, why: refused ? `${refused.reason}: ${refused.note}` : 'no listener admits it' };
    })
    .sort((x, y) => (x.route < y.route ? -1 : x.route > y.route ? 1 : 0));
}

export function evidence(f: ExplainFactsWithPdb, a: Answer): Evidence {
  const { gateway, deployment } = f.observed;
  const ours = deployment !== null && isControlledBy(deployment, gateway) ? deployment : null;
  const r = a.recorded;
  const c = a.current;
  const row = (input: string, recorded: string | undefined, live: string | undefined) => ({ input, recorded: recorded ?? '-', live: live ?? '-', same: recorded !== undefined && recorded === live });
  const cfg = (s: typeof r) => (s === null ? undefined : `${s.configurationName} generation ${s.configurationGeneration}`);
  const regarded = [{ kind: 'Gateway', name: gateway.metadata.name }, { kind: 'Deployment', name: deploymentName(gateway.metadata.name) }, ...f.observed.routes.filter((x) => parentRefNames(x, gateway) !== null).map((x) => ({ kind: 'L34Route', name: x.metadata.name }))];
  return {
    conditions: (gateway.status?.conditions ?? []).map((k) => ({ type: k.type, status: k.status, reason: k.reason, age: age(k.lastTransitionTime, f.now), message: k.message ?? '' })),
    applied: ours === null ? [] : [
      row('GatewayConfiguration', cfg(r), cfg(c)),
      row('Gateway generation', r ? String(r.gatewayGeneration) : undefined, c ? String(c.gatewayGeneration) : String(gateway.metadata.generation ?? 0)),
      row('LB template hash', r?.templateHash, f.templateHash),
    ],
    rollout: ours === null ? 'no LB Deployment of this Gateway' : rolloutStatus(ours).message,
    pdb: pdbText(f),
    budget: budgetText(f, a),
    routes: routes(f),
    events: warningsAbout(f.events, regarded, EVENTS_SHOWN).map((x) => ({ ...x, age: age(x.when, f.now) })),
  };
}

const table = (rows: string[][]): string[] => textTable(rows, { indent: '  ', gap: '  ' });

export function renderExplain(a: Answer, e: Evidence): string {
  const lines = [a.sentence, '', 'Conditions:'];
  lines.push(...(e.conditions.length === 0 ? ['  none'] : table(e.conditions.map((k) => [k.type, k.status, k.reason, k.age ?? '-', k.message]))));
  lines.push('', 'Applied state (recorded on the LB Deployment, against the live inputs):');
  lines.push(...(e.applied.length === 0 ? ['  no LB Deployment of this Gateway'] : table(e.applied.map((x) => [x.input, x.recorded, x.live === x.recorded ? '=' : `live: ${x.live}`, x.same ? '✓' : '✗']))));
  lines.push('', `Rollout: ${e.rollout}`, `PodDisruptionBudget: ${e.pdb}`, `Rollout budget: ${e.budget}`, '', 'Routes:');
  lines.push(...(e.routes.length === 0 ? ['  none names this Gateway'] : table(e.routes.map((x) => [x.route, x.attached ? 'attached' : 'not attached', x.why]))));
  lines.push('', `Warning Events (last ${EVENTS_SHOWN}):`);
  lines.push(...(e.events.length === 0 ? ['  none'] : table(e.events.map((x) => [x.age ?? '-', x.object, x.reason, `x${x.count}`, x.note]))));
  return `${lines.join('\n')}\n`;
}
