// Which Deployment write, if any, brings the live object to the render.
import { readAppliedState, sameState, type AppliedState } from './applied-annotations.js';
import { admissionExplains } from './admission-record.js';
import { needsWrite, overlayManaged } from './deployment-diff.js';
import type { Context } from './plan-context.js';
import type { DeploymentAction } from './plan-types.js';
import type { Deployment } from '../../../api/schemas.js';

// Once this invocation has written (or tried to), it does not ask for another
// write: redelivery or the resync plans again from fresh reads.
export function deploymentAction(ctx: Context, rendered: Deployment, current: AppliedState, enforceReplicas: boolean): DeploymentAction {
  if (ctx.observed.write !== undefined) return { action: 'none' };
  if (ctx.ours === null) return { action: 'create', object: rendered };
  // When the recorded inputs differ, a write is due anyway; it then carries
  // the managed fields exactly as rendered (see overlayManaged).
  const force = !sameState(readAppliedState(ctx.ours), current);
  const body = overlayManaged(ctx.ours, rendered, { force });
  if (!needsWrite(ctx.ours, body)) return { action: 'none' };
  // The only difference is what admission made of our last write of this
  // very render: writing again would be undone the same way (a write loop).
  if (!force && admissionExplains(ctx.ours, rendered, body, enforceReplicas)) return { action: 'none' };
  return { action: 'update', object: body };
}
