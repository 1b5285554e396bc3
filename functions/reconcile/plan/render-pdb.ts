// The opt-in PodDisruptionBudget of an LB Deployment (LB_PDB_MAX_UNAVAILABLE,
// docs/operations.md "PodDisruptionBudgets"): one per LB Deployment, of the
// same name and namespace, selecting the Deployment's Pods, controlled by the
// Gateway so that the garbage collector removes it with the Gateway. Pure: the
// shell (reconcile.ts) and the resync (dispatch/resync-plan.ts) ask the same
// question of the same function.
import { cloneJson } from './clone-json.js';
import { canonicalJson } from './canonical-json.js';
import { gatewayNameLabel } from './names.js';
import { isControlledBy, ownerReferenceFor } from './render-deployment.js';
import type { LbPdbSetting, PlannedEvent } from './plan-types.js';
import { GATEWAY_GROUP, GATEWAY_KIND, LABEL_APP, LABEL_GATEWAY_NAME, LABEL_MANAGED_BY, MANAGED_BY_VALUE } from '../../../api/names.js';
import type { Deployment, Gateway, OwnerReference, PodDisruptionBudget } from '../../../api/schemas.js';

/** What the PDB write of a reconcile is, if any. */
export type PdbAction =
  | { action: 'none' }
  | { action: 'create' | 'update'; object: PodDisruptionBudget }
  // A PDB of our name that this Gateway does not control: never adopted or changed.
  | { action: 'collision'; owner: string };

/**
 * The PDB for `deployment`, the LB Deployment this Gateway controls as it is
 * live (after this reconcile's write): its selector is the Deployment's, so
 * the PDB counts exactly the Pods the Deployment manages.
 */
export function renderPdb(gateway: Gateway, deployment: Deployment, setting: LbPdbSetting): PodDisruptionBudget {
  const name = deployment.metadata.name;
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: {
      name,
      namespace: deployment.metadata.namespace ?? gateway.metadata.namespace ?? '',
      labels: { [LABEL_APP]: name, [LABEL_GATEWAY_NAME]: gatewayNameLabel(gateway.metadata.name), [LABEL_MANAGED_BY]: MANAGED_BY_VALUE },
      ownerReferences: [ownerReferenceFor(gateway)],
    },
    spec: {
      selector: cloneJson(deployment.spec.selector ?? { matchLabels: { [LABEL_APP]: name } }),
      maxUnavailable: setting.maxUnavailable,
    },
  };
}

function controllerOf(pdb: PodDisruptionBudget): OwnerReference | undefined {
  return pdb.metadata.ownerReferences?.find((ref) => ref.controller === true);
}

// As for the Deployment: by uid, so a Gateway re-created under the same name
// does not take over the PDB the garbage collector is about to remove.
function pdbControlledBy(pdb: PodDisruptionBudget, gateway: Gateway): boolean {
  const c = controllerOf(pdb);
  return c !== undefined && c.kind === GATEWAY_KIND && c.apiVersion.startsWith(`${GATEWAY_GROUP}/`) && c.uid === gateway.metadata.uid;
}

const same = (a: unknown, b: unknown): boolean => canonicalJson(a ?? null) === canonicalJson(b ?? null);

/**
 * The live PDB with the fields we own set as rendered, everything else (other
 * labels, annotations, unhealthyPodEvictionPolicy, other owners) kept; null
 * when those fields already are as rendered (a no-op writes nothing).
 */
function overlay(live: PodDisruptionBudget, rendered: PodDisruptionBudget): PodDisruptionBudget | null {
  const labels = { ...live.metadata.labels, ...rendered.metadata.labels };
  const spec: PodDisruptionBudget['spec'] = { ...live.spec, selector: rendered.spec.selector, maxUnavailable: rendered.spec.maxUnavailable };
  // minAvailable and maxUnavailable are exclusive: ours is maxUnavailable.
  delete spec.minAvailable;
  if (same(labels, live.metadata.labels) && same(spec, live.spec)) return null;
  return { ...live, metadata: { ...live.metadata, labels }, spec };
}

/**
 * The PDB write that brings the live PDB to the render. `deployment`: the
 * live LB Deployment after this reconcile's write, null when there is none;
 * no PDB is planned for a Deployment this Gateway does not control (a name
 * collision) or for a Gateway being deleted.
 */
export function pdbAction(gateway: Gateway, deployment: Deployment | null, live: PodDisruptionBudget | null, setting: LbPdbSetting): PdbAction {
  if (deployment === null || gateway.metadata.deletionTimestamp !== undefined || !isControlledBy(deployment, gateway)) return { action: 'none' };
  const rendered = renderPdb(gateway, deployment, setting);
  if (live === null) return { action: 'create', object: rendered };
  if (!pdbControlledBy(live, gateway)) {
    const c = controllerOf(live);
    return { action: 'collision', owner: c ? `${c.kind} ${c.name} (uid ${c.uid})` : 'no controller' };
  }
  const body = overlay(live, rendered);
  return body === null ? { action: 'none' } : { action: 'update', object: body };
}

/** The Event that says what became of the PDB write (or why none was made). */
export function pdbEvent(action: Exclude<PdbAction, { action: 'none' }>, ref: string, failure?: { message: string }): PlannedEvent {
  if (action.action === 'collision') {
    return { type: 'Warning', reason: 'PodDisruptionBudgetCollision', action: 'Reconcile', note: `PodDisruptionBudget ${ref} exists and is not controlled by this Gateway (its controller: ${action.owner}); it is left alone and the LB Pods have no PodDisruptionBudget of this controller` };
  }
  const verb = action.action === 'create' ? 'Create' : 'Update';
  if (failure) return { type: 'Warning', reason: 'PodDisruptionBudgetFailed', action: verb, note: `${verb} of PodDisruptionBudget ${ref} failed: ${failure.message}` };
  return { type: 'Normal', reason: 'PodDisruptionBudgetApplied', action: verb, note: action.action === 'create' ? `PodDisruptionBudget ${ref} created` : `PodDisruptionBudget ${ref} brought back to the render` };
}
