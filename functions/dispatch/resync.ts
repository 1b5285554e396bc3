// Drift found by lists (docs/design.md §11). A resync pass, and the fan-out
// of a GatewayConfiguration or GatewayClass event, list what the plans read
// and run the planner over every Gateway in memory; only the Gateways whose
// reconcile would write something are reconciled. The reconcile stays the
// writer: it reads everything again, one Gateway per invocation, and writes
// with optimistic concurrency. A list only decides who gets reconciled.
//
// A pass plans a page of Gateways at a time, joined with their LB
// Deployments as the two lists advance together (resync-merge.ts), and keeps
// of each drifted Gateway only its reconcile request: its memory does not
// grow with the number of Gateways (docs/operations.md, "Resync").
import { GATEWAY_CLASS_CRD, BUNDLE_VERSION_ANNOTATION } from '../gatewayclass/supported.js';
import type { KubeApi } from '../kube/kube-api.js';
import { PAGE_SIZE } from '../kube/list-pages.js';
import { conditionTime } from '../reconcile/plan/conditions.js';
import { deploymentName } from '../reconcile/plan/names.js';
import { hintOf } from '../reconcile/plan/gateway-reads.js';
import type { Settings } from '../reconcile/plan/plan-types.js';
import type { Deployment, Gateway, GatewayClass, PodDisruptionBudget } from '../../api/schemas.js';
import type { Template } from '../reconcile/template.js';
import type { DispatchScope, Target } from './target.js';
import { keyOf } from './gateway-keys.js';
import { deploymentPages, indexed, listAll, managedPdbs, pagesIn, planInputs, type ListScope, type PlanInputs, type RequestCount } from './resync-inputs.js';
import { deploymentKey, joinPages, noPages, pagesOfArray, type Joined } from './resync-merge.js';
import { classDrifts, gatewayDrifts, gatewayPlan, objectKey, pdbDrifts, planWrites, type ListedInputs, type PlanningContext } from './resync-plan.js';
import { isQueued, slotHeld } from '../reconcile/plan/rollout-budget.js';

export interface PlanningDeps {
  template: Template;
  settings: Settings;
  clock: () => Date;
}

export interface ResyncPass {
  /** The Gateways whose reconcile would write, with the hint each gives. */
  targets: Target[];
  /** The GatewayClasses of ours whose status would change. */
  classes: string[];
  /** Gateways planned. */
  gateways: number;
  /** Of those, the Gateways of this controller's classes: what kube-state-metrics should expose (the blind-monitoring alert compares). */
  ours: number;
  /** API requests the pass made. */
  requests: number;
}

/** Objects per list request; the tests pass small pages to walk many pages with few objects. */
export interface PassOptions {
  pageSize: number;
}

const DEFAULT_PASS: PassOptions = { pageSize: PAGE_SIZE };

/** Sequential GETs that confirm a Deployment is really absent stay few; this many at a time. */
const CONFIRM_CONCURRENCY = 8;

function planningContext(deps: PlanningDeps): PlanningContext {
  return { input: { template: deps.template, settings: deps.settings }, now: conditionTime(deps.clock()) };
}

function rolloutTally(settings: Settings): { rollout?: RolloutTally } {
  const budget = settings.rolloutBudget ?? 0;
  return budget > 0 ? { rollout: { budget, rolling: 0, queued: [] } } : {};
}

function listScope(scope: DispatchScope): ListScope {
  return scope.namespaces.length === 0 ? undefined : scope.namespaces;
}

/** One walk of the join: Gateways, and the LB Deployments they are joined with. */
interface Segment {
  gateways: AsyncIterable<Gateway[]>;
  deployments: () => AsyncIterator<Deployment[], void, undefined>;
}

interface Planning {
  api: KubeApi;
  classes: GatewayClass[];
  inputs: PlanInputs;
  context: PlanningContext;
  count: RequestCount;
  /** The managed PDBs as listed, when the PDB setting is on and this walk checks them (a resync pass). */
  pdbs?: ReadonlyMap<string, PodDisruptionBudget>;
  /** With LB_ROLLOUT_BUDGET on: the rollouts counted on the way, and the queued Gateways held back until a slot is free. */
  rollout?: RolloutTally;
}

/**
 * A Gateway already queued by the rollout budget whose plan still asks for
 * the census would only be queued again: a pass hands it over only while
 * the slots held by the Deployments it walked (rollout-budget.ts slotHeld)
 * leave one free, the first ones in line (key order), so that a long line
 * costs a pass nothing more than its lists. The wakes in dispatch and in a
 * reconcile that leaves the line are what move it; this is their backstop.
 */
interface RolloutTally {
  budget: number;
  rolling: number;
  queued: Target[];
}

/**
 * The drifted Gateways of one joined page, as reconcile requests. A Gateway
 * the Deployments' list did not give whose plan asks for a write is planned
 * once more with its Deployment read by name: one that lost its label
 * (edited by hand) or belongs to someone else (a name collision) is not
 * listed, and only the real object tells drift from an in-sync collision.
 */
async function driftedOfPage(p: Planning, joined: readonly Joined[], inputs: ListedInputs): Promise<Target[]> {
  const targets: Target[] = [];
  const target = (gw: Gateway): void => {
    targets.push({ key: keyOf(gw), hint: hintOf(gw, p.classes) });
  };
  // The PDB as listed; a Gateway whose PDB the list did not give is read by
  // name, as its Deployment is, before it counts as drifted (a PDB that lost
  // its label, or someone else's of our name).
  const pdbs = p.pdbs;
  const listedPdb = (gw: Gateway): PodDisruptionBudget | null => pdbs?.get(deploymentKey(gw)) ?? null;
  const unlisted: Gateway[] = [];
  const unlistedPdb: { gw: Gateway; deployment: Deployment }[] = [];
  const judge = (gw: Gateway, deployment: Deployment): void => {
    const planned = gatewayPlan(gw, deployment, inputs, p.context);
    if (planWrites(planned)) {
      if (p.rollout && planned.outcome === 'needs-reads' && isQueued(gw)) p.rollout.queued.push({ key: keyOf(gw), hint: hintOf(gw, p.classes) });
      else target(gw);
    } else if (pdbs !== undefined && pdbDrifts(gw, deployment, listedPdb(gw), inputs, p.context)) {
      if (pdbs.has(deploymentKey(gw))) target(gw);
      else unlistedPdb.push({ gw, deployment });
    }
  };
  const controllerName = p.context.input.settings.controllerName;
  const isOurClass = (name: string): boolean => inputs.classes.get(name)?.spec.controllerName === controllerName;
  for (const { gateway, deployment } of joined) {
    // The slots held, counted as the census counts them: a Deployment its
    // Gateway of ours controls, rolling or stuck (not degraded).
    if (deployment !== undefined && p.rollout && slotHeld(gateway, deployment, isOurClass) !== null) p.rollout.rolling++;
    if (deployment !== undefined) judge(gateway, deployment);
    else if (gatewayDrifts(gateway, null, inputs, p.context)) unlisted.push(gateway);
  }
  await eachConcurrently(unlisted, async (gw) => {
    p.count.requests++;
    const deployment = await p.api.getDeployment(gw.metadata.namespace ?? '', deploymentName(gw.metadata.name));
    if (deployment === null) target(gw);
    else judge(gw, deployment);
  });
  await eachConcurrently(unlistedPdb, async ({ gw, deployment }) => {
    p.count.requests++;
    const pdb = await p.api.getPodDisruptionBudget(gw.metadata.namespace ?? '', deploymentName(gw.metadata.name));
    if (pdbDrifts(gw, deployment, pdb, inputs, p.context)) target(gw);
  });
  return targets;
}

/** Runs `each` over `items`, CONFIRM_CONCURRENCY at a time. */
async function eachConcurrently<T>(items: readonly T[], each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await each(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(CONFIRM_CONCURRENCY, items.length) }, worker));
}

const byKeyText = (a: Target, b: Target): number => {
  const x = objectKey(a.key.namespace, a.key.name);
  const y = objectKey(b.key.namespace, b.key.name);
  return x < y ? -1 : x > y ? 1 : 0;
};

/** Plans every Gateway of `segments`, a page at a time: the drifted ones in key order (stable fan-out), and how many were planned. */
async function driftedIn(p: Planning, segments: readonly Segment[], isOurs: (gw: Gateway) => boolean = () => false): Promise<{ targets: Target[]; planned: number; ours: number }> {
  const targets: Target[] = [];
  let planned = 0;
  let ours = 0;
  for (const segment of segments) {
    await joinPages(segment.gateways, segment.deployments(), async (joined) => {
      planned += joined.length;
      ours += joined.filter((j) => isOurs(j.gateway)).length;
      const inputs = await p.inputs.inputsFor(joined.map((j) => j.gateway));
      for (const t of await driftedOfPage(p, joined, inputs)) targets.push(t);
    });
  }
  if (p.rollout) targets.push(...p.rollout.queued.sort(byKeyText).slice(0, Math.max(0, p.rollout.budget - p.rollout.rolling)));
  return { targets: targets.sort(byKeyText), planned, ours };
}

/** The served namespaces one at a time (each list is in key order within its namespace), or every namespace in one walk. */
function listedSegments(api: KubeApi, where: ListScope, count: RequestCount, pageSize: number): Segment[] {
  return (where ?? [undefined]).map((namespace) => {
    const one = namespace === undefined ? undefined : [namespace];
    return {
      gateways: pagesIn(api, 'gateways', one, count, { pageSize }),
      deployments: () => deploymentPages(api, one, count, pageSize),
    };
  });
}

/**
 * The same walk over Gateways already in memory (an event's affected
 * Gateways): sorted into the Deployments' order, one segment per listed
 * namespace; any outside `where` have no listed Deployment and are read by name.
 */
function memorySegments(api: KubeApi, gateways: readonly Gateway[], where: ListScope, count: RequestCount, pageSize: number): Segment[] {
  // Each Gateway once, in key order.
  const unique = new Map(gateways.map((gw) => [objectKey(gw.metadata.namespace, gw.metadata.name), gw]));
  const sorted = [...unique.keys()].sort().map((key) => unique.get(key) as Gateway);
  if (where === undefined) return [{ gateways: pagesOfArray(sorted, pageSize), deployments: () => deploymentPages(api, undefined, count, pageSize) }];
  const served = new Set(where);
  const segments: Segment[] = where.map((namespace) => ({
    gateways: pagesOfArray(sorted.filter((gw) => (gw.metadata.namespace ?? '') === namespace), pageSize),
    deployments: () => deploymentPages(api, [namespace], count, pageSize),
  }));
  const outside = sorted.filter((gw) => !served.has(gw.metadata.namespace ?? ''));
  if (outside.length > 0) segments.push({ gateways: pagesOfArray(outside, pageSize), deployments: () => noPages<Deployment>() });
  return segments;
}

/**
 * One resync pass with `options` (resyncPass uses PAGE_SIZE): every Gateway
 * in the served namespaces is planned, and the GatewayClasses of ours; only
 * those whose reconcile would write are returned.
 */
export async function planResync(api: KubeApi, scope: DispatchScope, deps: PlanningDeps, options: PassOptions = DEFAULT_PASS): Promise<ResyncPass> {
  const { pageSize } = options;
  const count: RequestCount = { requests: 0 };
  const where = listScope(scope);
  const context = planningContext(deps);
  // With the PDB setting on, one list more (per 500 PDBs, per served namespace).
  const [classes, configurations, pdbs] = await Promise.all([
    listAll(api, 'gatewayclasses', undefined, count, pageSize),
    listAll(api, 'gatewayconfigurations', undefined, count, pageSize),
    deps.settings.lbPodDisruptionBudget !== undefined ? managedPdbs(api, where, count, pageSize) : undefined,
  ]);
  const ours = classes.filter((c) => c.spec.controllerName === scope.controllerName);
  if (ours.length > 0) count.requests++;
  const ourNames = new Set(ours.map((c) => c.metadata.name));
  const lookups = indexed(classes, configurations);
  const planning: Planning = { api, classes, inputs: planInputs(api, lookups, where, count, pageSize), context, count, ...(pdbs !== undefined && { pdbs }), ...rolloutTally(deps.settings) };
  const [crd, drifted] = await Promise.all([
    ours.length > 0 ? api.getCrdMetadata(GATEWAY_CLASS_CRD) : null,
    driftedIn(planning, listedSegments(api, where, count, pageSize), (gw) => ourNames.has(gw.spec.gatewayClassName)),
  ]);
  const bundleVersion = crd?.annotations?.[BUNDLE_VERSION_ANNOTATION];
  const classContext = { controllerName: scope.controllerName, template: deps.template.deployment, now: context.now };
  const driftedClasses = ours.filter((c) => classDrifts(c, lookups.configurations, bundleVersion, classContext)).map((c) => c.metadata.name).sort();
  return { targets: drifted.targets, classes: driftedClasses, gateways: drifted.planned, ours: drifted.ours, requests: count.requests };
}

/**
 * One resync pass: every Gateway in the served namespaces is planned, and the
 * GatewayClasses of ours; only those whose reconcile would write are returned.
 * In sync, that is a handful of lists (one request per 500 objects) and one
 * read of the GatewayClass CRD, whatever the number of Gateways.
 */
export function resyncPass(api: KubeApi, scope: DispatchScope, deps: PlanningDeps): Promise<ResyncPass> {
  return planResync(api, scope, deps);
}

/**
 * The fan-out of a GatewayConfiguration or GatewayClass event, cut to the
 * Gateways that drifted. `gateways` are the affected Gateways as dispatch
 * listed them; `classes` the classes, if dispatch listed them too.
 */
export async function driftedTargets(
  api: KubeApi,
  scope: DispatchScope,
  affected: { gateways: readonly Gateway[]; classes: readonly GatewayClass[] | undefined },
  deps: PlanningDeps,
): Promise<{ targets: Target[]; requests: number }> {
  const count: RequestCount = { requests: 0 };
  const namespaces = [...new Set(affected.gateways.map((gw) => gw.metadata.namespace ?? ''))];
  // One namespace: lists in it. Several: the served ones, or every namespace.
  const where: ListScope = namespaces.length === 1 ? namespaces : listScope(scope);
  const [classes, configurations] = await Promise.all([
    affected.classes ?? listAll(api, 'gatewayclasses', undefined, count),
    listAll(api, 'gatewayconfigurations', undefined, count),
  ]);
  const planning: Planning = { api, classes: [...classes], inputs: planInputs(api, indexed(classes, configurations), where, count), context: planningContext(deps), count, ...rolloutTally(deps.settings) };
  const drifted = await driftedIn(planning, memorySegments(api, affected.gateways, where, count, PAGE_SIZE));
  return { targets: drifted.targets, requests: count.requests };
}
