// `kubectl rollout status deployment/NAME`, as a sentence: the same checks
// in the same order as kubectl's DeploymentStatusViewer
// (k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go), so the plugin
// and kubectl never disagree on whether a rollout is done.
import { z } from 'zod';
import type { Deployment } from '../../api/schemas.js';

export interface RolloutStatus {
  done: boolean;
  /** kubectl's words. */
  message: string;
}

// The Deployment controller's conditions, with the fields kubectl prints
// (the function's schema keeps only what the budget reads).
const ProgressingSchema = z.looseObject({ type: z.literal('Progressing'), reason: z.string().optional(), message: z.string().optional(), lastUpdateTime: z.string().optional(), lastTransitionTime: z.string().optional() });

/** The Deployment controller's Progressing condition, typed. */
export function progressingCondition(d: Deployment): z.infer<typeof ProgressingSchema> | undefined {
  for (const c of d.status?.conditions ?? []) {
    const r = ProgressingSchema.safeParse(c);
    if (r.success) return r.data;
  }
  return undefined;
}

export function rolloutStatus(d: Deployment): RolloutStatus {
  const name = d.metadata.name;
  const status = d.status ?? {};
  if ((d.metadata.generation ?? 0) > (status.observedGeneration ?? 0)) return { done: false, message: 'Waiting for deployment spec update to be observed...' };
  if (progressingCondition(d)?.reason === 'ProgressDeadlineExceeded') return { done: false, message: `deployment "${name}" exceeded its progress deadline` };
  const wanted = d.spec.replicas;
  const updated = status.updatedReplicas ?? 0;
  const replicas = status.replicas ?? 0;
  const available = status.availableReplicas ?? 0;
  if (wanted !== undefined && updated < wanted) return { done: false, message: `Waiting for deployment "${name}" rollout to finish: ${updated} out of ${wanted} new replicas have been updated...` };
  if (replicas > updated) return { done: false, message: `Waiting for deployment "${name}" rollout to finish: ${replicas - updated} old replicas are pending termination...` };
  if (available < updated) return { done: false, message: `Waiting for deployment "${name}" rollout to finish: ${available} of ${updated} updated replicas are available...` };
  return { done: true, message: `deployment "${name}" successfully rolled out` };
}
