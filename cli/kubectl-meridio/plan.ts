// `kubectl meridio plan [NAME] [-n NS | -A]`: what the next reconcile of each
// Gateway would write, computed by this build's planner from the live
// objects, without writing anything. The template and settings are the ones
// the cluster's controller runs (its Knative Service and template ConfigMap:
// controller-install.ts), or --template FILE: the template of the release
// about to be installed, so that `plan` run from a new release's plugin
// before the upgrade says which LB Pods the upgrade rolls and why. Reads:
// the install (2), the Gateways and classes (paged lists, without NAME), the
// function's own observe per Gateway, and the rollout census once, only when
// the budget is on and a pod-template change asks for it.
import { dump } from 'js-yaml';
import type { GatewayKey } from '../../api/gateway-key.js';
import { conditionTime } from '../../functions/reconcile/plan/conditions.js';
import type { PlanInput, RolloutCensus } from '../../functions/reconcile/plan/plan-types.js';
import { ourClasses } from '../../functions/reconcile/plan/rollout-budget.js';
import { observe } from '../../functions/reconcile/observe.js';
import { readRolloutCensus } from '../../functions/reconcile/rollout-census.js';
import { censusScopeOf, readControllerInstall, type InstallOptions } from './controller-install.js';
import { planVerdict, type Verdict } from './plan-verdict.js';
import type { PluginContext, VerbResult } from './plugin-context.js';
import { textTable } from './text-table.js';
import { VerbError } from './verb-error.js';

/** The exit codes of `plan` (docs/operations.md, "Upgrading"). */
export const PLAN_EXIT = { nothingRolls: 0, somethingRolls: 1 } as const;

export interface PlanArgs {
  name?: string;
  controllerService?: InstallOptions['service'];
  templateFile?: string;
}

export interface PlanReport {
  template: { source: string; hash: string };
  settings: { controllerName: string; rolloutBudget: number; lbPodDisruptionBudget: string | null };
  gateways: Verdict[];
  /** How many Gateways' LB Pods would roll. */
  rolling: number;
}

/** At most this many Gateways observed at once: a bounded load on the API server. */
const CONCURRENCY = 8;

/** The Gateways to plan: the one named, or every Gateway of this controller's classes in the namespaces it serves (WATCH_NAMESPACES). */
async function keysToPlan(ctx: PluginContext, args: PlanArgs, controllerName: string, served: readonly string[]): Promise<GatewayKey[]> {
  if (args.name !== undefined) {
    if (ctx.namespace === undefined) throw new VerbError('plan NAME names one Gateway: give its namespace with -n, not -A');
    return [{ namespace: ctx.namespace, name: args.name }];
  }
  const [gateways, classes] = await Promise.all([ctx.api.listGateways(ctx.namespace), ctx.api.listGatewayClasses()]);
  const ours = ourClasses(classes, controllerName);
  return gateways
    .filter((g) => ours(g.spec.gatewayClassName) && (served.length === 0 || served.includes(g.metadata.namespace ?? '')))
    .map((g) => ({ namespace: g.metadata.namespace ?? '', name: g.metadata.name }))
    .sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1));
}

export async function planGateways(ctx: PluginContext, args: PlanArgs): Promise<PlanReport> {
  const install = await readControllerInstall(ctx.api, { ...(args.controllerService && { service: args.controllerService }), ...(args.templateFile !== undefined && { templateFile: args.templateFile }) });
  const input: PlanInput = { template: install.template, settings: install.settings };
  const keys = await keysToPlan(ctx, args, install.settings.controllerName, install.namespaces);
  const now = conditionTime(ctx.now);
  // One census for every Gateway: they are planned against the same line.
  let census: Promise<RolloutCensus> | undefined;
  const planOne = async (key: GatewayKey): Promise<Verdict> => {
    const observed = await observe(ctx.api, key, undefined, { pdb: install.settings.lbPodDisruptionBudget !== undefined });
    if (args.name !== undefined && observed.gateway === null) throw new VerbError(`Gateway ${key.namespace}/${key.name} not found`);
    const first = planVerdict(observed, input, now);
    if (!('needsCensus' in first)) return first;
    census ??= readRolloutCensus(ctx.api, censusScopeOf(install));
    const second = planVerdict({ ...observed, rollouts: await census }, input, now);
    if ('needsCensus' in second) throw new Error('the planner asked for the rollout census twice');
    return second;
  };
  const verdicts: Verdict[] = new Array<Verdict>(keys.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, keys.length) }, async () => {
    while (next < keys.length) {
      const i = next++;
      verdicts[i] = await planOne(keys[i] as GatewayKey);
    }
  }));
  const pdb = install.settings.lbPodDisruptionBudget;
  return {
    template: { source: install.templateSource, hash: install.template.hash },
    settings: { controllerName: install.settings.controllerName, rolloutBudget: install.settings.rolloutBudget ?? 0, lbPodDisruptionBudget: pdb === undefined ? null : String(pdb.maxUnavailable) },
    gateways: verdicts,
    rolling: verdicts.filter((v) => v.rolls).length,
  };
}

const VERDICT_TEXT: Record<Verdict['verdict'], string> = {
  nothing: 'nothing',
  'metadata-only': 'metadata only',
  create: 'create',
  'pod-template-change': 'pod-template change',
  queued: 'queued',
  invalid: 'invalid',
  collision: 'name collision',
  'not-ours': 'not ours',
  deleted: 'deleted',
};


export function renderPlan(report: PlanReport, wide: boolean): string {
  const header = [`LB template: ${report.template.source} (hash ${report.template.hash.slice(0, 12)}); LB_ROLLOUT_BUDGET=${report.settings.rolloutBudget}`];
  if (report.gateways.length === 0) return `${header[0]}\nNo Gateways of ${report.settings.controllerName}.\n`;
  const rows = [['GATEWAY', 'VERDICT', 'ROLLS', wide ? 'FIELDS' : 'WHY'], ...report.gateways.map((v) => [v.gateway, VERDICT_TEXT[v.verdict], v.rolls ? 'yes' : 'no', wide ? v.fields.join(',') || '-' : v.message])];
  const wideMessages = wide ? report.gateways.map((v) => `${v.gateway}: ${v.message}`) : [];
  const summary = `${report.rolling} of ${report.gateways.length} Gateway${report.gateways.length === 1 ? '' : 's'} would roll their LB Pods.`;
  return `${[...header, textTable(rows).join('\n'), ...(wide ? ['', ...wideMessages] : []), summary].join('\n')}\n`;
}

export async function runPlan(ctx: PluginContext, args: PlanArgs): Promise<VerbResult> {
  const report = await planGateways(ctx, args);
  const exitCode = report.rolling > 0 ? PLAN_EXIT.somethingRolls : PLAN_EXIT.nothingRolls;
  if (ctx.output === 'json') return { text: `${JSON.stringify(report, null, 2)}\n`, exitCode };
  if (ctx.output === 'yaml') return { text: dump(report, { lineWidth: -1 }), exitCode };
  return { text: renderPlan(report, ctx.output === 'wide'), exitCode };
}
