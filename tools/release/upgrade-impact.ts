// What upgrading from the previous release to this build does to LB Pods,
// over the recorded Meridio-2 cases (test/oracle/meridio2/) and the samples
// (infra/samples/): for each case, the previous release's own planner (its
// built dist/, loaded from its tree) renders the LB Deployment from the
// case's objects and its own LB template, as it would have stored it; then
// this build's `kubectl meridio plan` verdict (plan-verdict.ts, the
// function's own planner) says what its next reconcile does to that
// Deployment with this release's template: nothing, metadata only, or a
// pod-template change (the LB Pods roll), with the fields and why.
//
// `npm run release` runs it as a script and puts the answer in the release
// notes (upgrade-notes.mts). The previous planner is another build's code:
// what it returns is parsed here, never trusted.
//
// Usage: node dist/tools/release/upgrade-impact.js --previous <built tree> --previous-version <v> --template <LB template file> --out <file.json>
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadAll } from 'js-yaml';
import { z } from 'zod';
import { DEFAULT_CONTROLLER_NAME } from '../../api/names.js';
import { DeploymentSchema, GatewayClassSchema, GatewayConfigurationSchema, GatewaySchema, L34RouteSchema, type Deployment } from '../../api/schemas.js';
import { planVerdict } from '../../cli/kubectl-meridio/plan-verdict.js';
import type { Observed, PlanInput, Settings } from '../../functions/reconcile/plan/plan-types.js';
import { parseTemplate } from '../../functions/reconcile/template.js';
import { CaseStore } from '../../test/oracle/case-store.js';
import { oracleCases, type OracleOperation } from '../../test/oracle/oracle-cases.js';
import type { ImpactReport, ImpactRow } from './upgrade-notes.mts';

/** The clock both planners see: the comparison is of renderings, not of times. */
const NOW = '2026-01-01T00:00:00Z';
const SAMPLES_DIR = 'infra/samples';
const DEFAULT_LB_SERVICE_ACCOUNT = 'stateless-load-balancer';

export interface ImpactCase {
  name: string;
  observed: Observed;
  settings: Settings;
}

/** The previous release's planner: its plan() and template parser, as its dist/ exports them. */
export interface PreviousPlanner {
  plan(observed: Observed, input: PlanInput, now: string): unknown;
  parseTemplate(text: string, source: string): unknown;
}

const PreviousTemplateSchema = z.object({ deployment: DeploymentSchema, hash: z.string() });
const PreviousCreateSchema = z.object({ outcome: z.literal('needs-write'), deployment: z.object({ action: z.literal('create'), object: DeploymentSchema }) });

const isFunction = (x: unknown): x is (...args: never[]) => unknown => typeof x === 'function';

/** Loads the previous release's planner from its built tree. */
export async function loadPreviousPlanner(tree: string): Promise<PreviousPlanner> {
  const planModule: unknown = await import(pathToFileURL(join(tree, 'dist', 'functions', 'reconcile', 'plan', 'plan.js')).href);
  const templateModule: unknown = await import(pathToFileURL(join(tree, 'dist', 'functions', 'reconcile', 'template.js')).href);
  const plan = (planModule as { plan?: unknown }).plan;
  const parse = (templateModule as { parseTemplate?: unknown }).parseTemplate;
  if (!isFunction(plan) || !isFunction(parse)) throw new Error(`${tree}: its dist/ exports no plan() or parseTemplate() (not a built release of this controller?)`);
  return { plan: plan as PreviousPlanner['plan'], parseTemplate: parse as PreviousPlanner['parseTemplate'] };
}

type Json = Record<string, unknown>;

function observedOf(key: { namespace: string; name: string }, store: CaseStore): Observed {
  const gateway = store.ofKind('Gateway').map((g) => GatewaySchema.parse(g)).find((g) => g.metadata.name === key.name) ?? null;
  const ref = gateway?.spec.infrastructure?.parametersRef;
  const configuration = store.ofKind('GatewayConfiguration').find((c) => (c.metadata as Json).name === ref?.name);
  const cls = store.ofKind('GatewayClass')[0];
  return {
    key,
    gateway,
    gatewayClass: cls ? GatewayClassSchema.parse(cls) : null,
    gatewayConfiguration: configuration ? GatewayConfigurationSchema.parse(configuration) : null,
    deployment: null,
    routes: store.ofKind('L34Route').map((r) => L34RouteSchema.parse(r)),
    namespaces: null,
  };
}

/** Every recorded Meridio-2 case at its last step, and the samples. */
export function impactCases(root: string): ImpactCase[] {
  const cases = oracleCases(join(root, 'test', 'oracle', 'meridio2', 'cases')).map((c): ImpactCase => {
    const store = new CaseStore();
    for (const step of c.inputs.steps) for (const op of step.operations) store.apply(op);
    return {
      name: `meridio-2 case ${c.name}`,
      observed: observedOf({ namespace: c.inputs.namespace, name: c.inputs.gateway }, store),
      settings: { controllerName: c.inputs.controller.controllerName, lbServiceAccount: c.inputs.controller.lbServiceAccount },
    };
  });
  const samples = new CaseStore();
  for (const file of readdirSync(join(root, SAMPLES_DIR)).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort()) {
    for (const doc of loadAll(readFileSync(join(root, SAMPLES_DIR, file), 'utf8'))) {
      const object = z.looseObject({ apiVersion: z.string(), kind: z.string(), metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }) }).parse(doc);
      samples.apply({ op: 'create', object } satisfies OracleOperation);
    }
  }
  const sample = GatewaySchema.parse(samples.ofKind('Gateway')[0]);
  cases.push({
    name: `sample ${sample.metadata.namespace ?? ''}/${sample.metadata.name}`,
    observed: observedOf({ namespace: sample.metadata.namespace ?? '', name: sample.metadata.name }, samples),
    settings: { controllerName: DEFAULT_CONTROLLER_NAME, lbServiceAccount: DEFAULT_LB_SERVICE_ACCOUNT },
  });
  return cases;
}

/** As the API server stores a created Deployment: identity and generation (the planner compares what it sets, so defaults do not matter). */
function stored(created: Deployment): Deployment {
  return { ...created, metadata: { ...created.metadata, uid: 'uid-lb-deployment', generation: 1, resourceVersion: '1', creationTimestamp: NOW } };
}

/**
 * One row per case: what this build's next reconcile does to the LB
 * Deployment the previous release stored. Templates as text: each
 * release's own.
 */
export function compareReleases(opts: { previous: PreviousPlanner; previousTemplate: string; template: string; cases: readonly ImpactCase[] }): ImpactRow[] {
  const previousTemplate = PreviousTemplateSchema.parse(opts.previous.parseTemplate(opts.previousTemplate, 'the previous release\'s LB template'));
  const template = parseTemplate(opts.template, 'this release\'s LB template');
  return opts.cases.map((c) => {
    const before = opts.previous.plan(c.observed, { template: previousTemplate, settings: c.settings }, NOW);
    const created = PreviousCreateSchema.safeParse(before);
    const observed = created.success ? { ...c.observed, deployment: stored(created.data.deployment.object) } : c.observed;
    const verdict = planVerdict(observed, { template, settings: c.settings }, NOW);
    if ('needsCensus' in verdict) throw new Error(`${c.name}: the planner asked for the rollout census with the budget off`);
    return {
      case: c.name,
      previous: created.success ? 'deployment' : 'none',
      verdict: verdict.verdict,
      rolls: created.success && verdict.rolls,
      fields: verdict.fields,
      causes: verdict.causes,
      message: verdict.message,
    };
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { previous: { type: 'string' }, 'previous-version': { type: 'string' }, template: { type: 'string' }, out: { type: 'string' } } });
  const opts = z.object({ previous: z.string().min(1), 'previous-version': z.string().min(1), template: z.string().min(1), out: z.string().min(1) }).safeParse(values);
  if (!opts.success) throw new Error('usage: node dist/tools/release/upgrade-impact.js --previous <built tree> --previous-version <v> --template <LB template file> --out <file.json>');
  const { previous, template, out } = opts.data;
  const rows = compareReleases({
    previous: await loadPreviousPlanner(previous),
    previousTemplate: readFileSync(join(previous, 'infra', 'templates', 'lb-deployment.yaml'), 'utf8'),
    template: readFileSync(template, 'utf8'),
    cases: impactCases(process.cwd()),
  });
  const report: ImpactReport = { previousVersion: opts.data['previous-version'], rows };
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`upgrade-impact: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
