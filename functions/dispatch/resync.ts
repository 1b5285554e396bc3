// Drift found by lists (docs/design.md §11). A resync pass, and the fan-out
// of a GatewayConfiguration or GatewayClass event, list what the plans read
// and run the planner over every Gateway in memory; only the Gateways whose
// reconcile would write something are reconciled. The reconcile stays the
// writer: it reads everything again, one Gateway per invocation, and writes
// with optimistic concurrency. A list only decides who gets reconciled.
import { GATEWAY_CLASS_CRD, BUNDLE_VERSION_ANNOTATION } from '../gatewayclass/supported.js';
import type { KubeApi } from '../kube/kube-api.js';
import { conditionTime } from '../reconcile/plan/conditions.js';
import { deploymentName } from '../reconcile/plan/names.js';
import { hintOf } from '../reconcile/plan/gateway-reads.js';
import type { Settings } from '../reconcile/plan/plan-types.js';
import type { Deployment, Gateway, GatewayClass } from '../../api/schemas.js';
import type { Template } from '../reconcile/template.js';
import type { DispatchScope, Target } from './target.js';
import { keyOf, uniqueKeys } from './gateway-keys.js';
import { eachDeploymentPage, listAll, readInputs, type ListScope, type RequestCount } from './resync-inputs.js';
import { classDrifts, gatewayDrifts, objectKey, type ListedInputs, type PlanningContext } from './resync-plan.js';

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
  /** API requests the pass made. */
  requests: number;
}

/** Sequential GETs that confirm a Deployment is really absent stay few; this many at a time. */
const CONFIRM_CONCURRENCY = 8;

function planningContext(deps: PlanningDeps): PlanningContext {
  return { input: { template: deps.template, settings: deps.settings }, now: conditionTime(deps.clock()) };
}

function listScope(scope: DispatchScope): ListScope {
  return scope.namespaces.length === 0 ? undefined : scope.namespaces;
}

/**
 * The Gateways among `candidates` whose reconcile would write. Their LB
 * Deployments are listed by label a page at a time, each Gateway planned when
 * its Deployment's page arrives. A Gateway whose Deployment was not listed
 * and whose plan asks for a write is planned once more with its Deployment
 * read by name: one that lost its label (edited by hand) or belongs to
 * someone else (a name collision) is not listed, and only the real object
 * tells drift from an in-sync collision.
 */
async function driftedAmong(api: KubeApi, candidates: readonly Gateway[], inputs: ListedInputs, scope: ListScope, context: PlanningContext, count: RequestCount): Promise<Gateway[]> {
  const pending = new Map<string, Gateway>();
  for (const gw of candidates) pending.set(objectKey(gw.metadata.namespace, deploymentName(gw.metadata.name)), gw);
  const drifted: Gateway[] = [];
  const planWith = (gw: Gateway, deployment: Deployment | null): void => {
    if (gatewayDrifts(gw, deployment, inputs, context)) drifted.push(gw);
  };
  await eachDeploymentPage(api, scope, (page) => {
    for (const deployment of page) {
      const key = objectKey(deployment.metadata.namespace, deployment.metadata.name);
      const gw = pending.get(key);
      if (gw === undefined) continue;
      pending.delete(key);
      planWith(gw, deployment);
    }
  }, count);

  const unlisted = [...pending.values()].filter((gw) => gatewayDrifts(gw, null, inputs, context));
  let next = 0;
  const confirm = async (): Promise<void> => {
    while (next < unlisted.length) {
      const gw = unlisted[next++] as Gateway;
      count.requests++;
      const deployment = await api.getDeployment(gw.metadata.namespace ?? '', deploymentName(gw.metadata.name));
      if (deployment === null) drifted.push(gw);
      else planWith(gw, deployment);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONFIRM_CONCURRENCY, unlisted.length) }, confirm));
  return drifted;
}

/** Targets in key order (stable fan-out), each with the hint its Gateway gives. */
function targetsOf(gateways: readonly Gateway[], classes: readonly GatewayClass[]): Target[] {
  const byKey = new Map(gateways.map((gw) => [objectKey(gw.metadata.namespace, gw.metadata.name), gw]));
  return uniqueKeys(gateways.map(keyOf)).map((key) => {
    const gw = byKey.get(objectKey(key.namespace, key.name)) as Gateway;
    return { key, hint: hintOf(gw, [...classes]) };
  });
}

/**
 * One resync pass: every Gateway in the served namespaces is planned, and the
 * GatewayClasses of ours; only those whose reconcile would write are returned.
 * In sync, that is a handful of lists (one request per 500 objects) and one
 * read of the GatewayClass CRD, whatever the number of Gateways.
 */
export async function resyncPass(api: KubeApi, scope: DispatchScope, deps: PlanningDeps): Promise<ResyncPass> {
  const count: RequestCount = { requests: 0 };
  const where = listScope(scope);
  const context = planningContext(deps);
  const [classes, gateways] = await Promise.all([listAll(api, 'gatewayclasses', undefined, count), listAll(api, 'gateways', where, count)]);
  const ours = classes.filter((c) => c.spec.controllerName === scope.controllerName);
  const [inputs, crd] = await Promise.all([
    readInputs(api, gateways, classes, where, count),
    ours.length > 0 ? api.getCrdMetadata(GATEWAY_CLASS_CRD) : null,
  ]);
  if (ours.length > 0) count.requests++;
  const bundleVersion = crd?.annotations?.[BUNDLE_VERSION_ANNOTATION];
  const classContext = { controllerName: scope.controllerName, template: deps.template.deployment, now: context.now };
  const driftedClasses = ours.filter((c) => classDrifts(c, inputs.configurations, bundleVersion, classContext)).map((c) => c.metadata.name).sort();
  const drifted = await driftedAmong(api, gateways, inputs, where, context, count);
  return { targets: targetsOf(drifted, classes), classes: driftedClasses, gateways: gateways.length, requests: count.requests };
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
  const classes = affected.classes ?? (await listAll(api, 'gatewayclasses', undefined, count));
  const context = planningContext(deps);
  const inputs = await readInputs(api, affected.gateways, classes, where, count);
  const drifted = await driftedAmong(api, affected.gateways, inputs, where, context, count);
  return { targets: targetsOf(drifted, classes), requests: count.requests };
}
