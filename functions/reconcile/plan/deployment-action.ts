// Which Deployment write, if any, brings the live object to the render.
import { readAppliedState, sameState } from './applied-annotations.js';
import { admissionExplains } from './admission-record.js';
import { needsWrite, overlayManaged } from './deployment-diff.js';
import type { AppliedState, DeploymentWrite, GatewayFacts } from './plan-types.js';
import type { Deployment } from '../../../api/schemas.js';

// Null: the live Deployment already is the render (or differs only as
// admission made it differ).
export function deploymentAction(ctx: GatewayFacts, rendered: Deployment, current: AppliedState, enforceReplicas: boolean): DeploymentWrite | null {
  if (ctx.ours === null) return { action: 'create', object: rendered };
  // When the recorded inputs differ, a write is due anyway; it then carries
  // the managed fields exactly as rendered (see overlayManaged).
  const force = !sameState(readAppliedState(ctx.ours), current);
  const body = overlayManaged(ctx.ours, rendered, { force });
  if (!needsWrite(ctx.ours, body)) return null;
  // The only difference is what admission made of our last write of this
  // very render: writing again would be undone the same way (a write loop).
  if (!force && admissionExplains(ctx.ours, rendered, body, enforceReplicas)) return null;
  return { action: 'update', object: body };
}
