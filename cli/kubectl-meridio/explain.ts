// `kubectl meridio explain NAME [-n NS]`: the reading part. For one Gateway:
// what the controller runs (its Service and template ConfigMap, 2 reads),
// the function's own observe (the Gateway, its LB Deployment, the routes,
// the class, the GatewayConfiguration: 5 reads; the PDB too when the
// controller makes them), the namespace's Warning Events (1 paged list), and
// only for a Gateway that waits for the rollout budget, the budget's census
// (3 paged lists). Read-only: nothing here writes.
import { dump } from 'js-yaml';
import { forEachPage } from '../../functions/kube/list-pages.js';
import { observe } from '../../functions/reconcile/observe.js';
import { readRolloutCensus } from '../../functions/reconcile/rollout-census.js';
import { findCondition } from '../../functions/reconcile/plan/conditions.js';
import { CONDITION_APPLIED } from '../../api/names.js';
import { ROLLOUT_QUEUED } from '../../functions/reconcile/plan/rollout-budget.js';
import type { KubeApi } from '../../functions/kube/kube-api.js';
import { answer, type Answer } from './explain-answer.js';
import { evidence, renderExplain, type Evidence } from './explain-evidence.js';
import { censusScopeOf, readControllerInstall, type ControllerInstall, type InstallOptions } from './controller-install.js';
import type { PluginContext, VerbResult } from './plugin-context.js';
import { VerbError } from './verb-error.js';
import { EVENTS, WarningEventSchema, type WarningEvent } from './warning-events.js';

export interface ExplainArgs {
  name: string;
  /** Where the controller's Knative Service is (default: the install's). */
  controllerService?: InstallOptions['service'];
}

export interface Explanation extends Answer {
  gateway: string;
  /** Where the template the comparison uses came from, or why none. */
  template: string;
  evidence: Evidence;
}

async function warnings(api: KubeApi, namespace: string): Promise<WarningEvent[]> {
  const out: WarningEvent[] = [];
  await forEachPage((limit, token) => api.listObjectPage(EVENTS, WarningEventSchema, { namespace, fieldSelector: 'type=Warning', limit, ...(token !== undefined && { continue: token }) }), (page) => {
    out.push(...page);
  });
  return out;
}

/** The controller's install, or why it could not be read: explain still answers from the Gateway's own status. */
async function installOrWhy(api: KubeApi, args: ExplainArgs): Promise<ControllerInstall | { problem: string }> {
  try {
    return await readControllerInstall(api, args.controllerService ? { service: args.controllerService } : {});
  } catch (err) {
    if (err instanceof VerbError) return { problem: err.message };
    throw err;
  }
}

export async function explainGateway(ctx: PluginContext, args: ExplainArgs): Promise<Explanation> {
  const namespace = ctx.namespace;
  if (namespace === undefined) throw new VerbError('explain names one Gateway: give its namespace with -n, not -A');
  const key = { namespace, name: args.name };
  const install = await installOrWhy(ctx.api, args);
  const known = 'problem' in install ? undefined : install;
  const [observed, events] = await Promise.all([
    observe(ctx.api, key, undefined, { pdb: known?.settings.lbPodDisruptionBudget !== undefined }),
    warnings(ctx.api, namespace),
  ]);
  const { gateway } = observed;
  if (gateway === null) throw new VerbError(`Gateway ${namespace}/${args.name} not found`);
  const budget = known?.settings.rolloutBudget ?? 0;
  const applied = findCondition(gateway.status?.conditions ?? [], CONDITION_APPLIED);
  const waits = budget > 0 && applied?.status === 'False' && applied.reason === ROLLOUT_QUEUED;
  const census = waits && known !== undefined ? await readRolloutCensus(ctx.api, censusScopeOf(known)) : undefined;
  const facts = {
    observed: { ...observed, gateway },
    controllerName: known?.settings.controllerName ?? ctx.controllerName,
    templateHash: known?.template.hash,
    rolloutBudget: budget,
    census,
    events,
    now: ctx.now,
    pdb: known?.settings.lbPodDisruptionBudget !== undefined ? (observed.pdb ?? null) : undefined,
  };
  const a = answer(facts);
  return { gateway: `${namespace}/${args.name}`, ...a, template: 'problem' in install ? install.problem : install.templateSource, evidence: evidence(facts, a) };
}

export async function runExplain(ctx: PluginContext, args: ExplainArgs): Promise<VerbResult> {
  const e = await explainGateway(ctx, args);
  if (ctx.output === 'json') return { text: `${JSON.stringify(e, null, 2)}\n`, exitCode: 0 };
  if (ctx.output === 'yaml') return { text: dump(e, { lineWidth: -1 }), exitCode: 0 };
  return { text: `${renderExplain(e, e.evidence)}\nLB template: ${e.template}\n`, exitCode: 0 };
}
