import type { Template } from '../../functions/reconcile/template.js';

/** The template with another image in its first (LB) container, under another hash: a pod-template change for every Gateway. */
export function withLbImage({ deployment, hash }: Template, image: string): Template {
  const changed = structuredClone(deployment);
  const lb = changed.spec.template.spec?.containers?.[0];
  if (!lb) throw new Error('the template has no container');
  lb.image = image;
  return { deployment: changed, hash: `${hash}-next` };
}
