import { createHash } from 'node:crypto';

// Names Knative derives for the objects it creates, for tests that stand in
// for one of its reconcilers or look up what one created.

/**
 * Knative's kmeta.ChildName: parent + suffix, or, when that is longer than a
 * name may be, the parent and a hash of both (knative.dev/pkg/kmeta/names.go).
 */
export function childName(parent: string, suffix: string): string {
  const longest = 63;
  const head = longest - 32;
  if (parent.length <= longest - suffix.length) return parent + suffix;
  if (head - suffix.length <= 0) {
    const hash = createHash('md5').update(parent + suffix).digest('hex');
    let ret = parent.slice(0, head) + hash;
    if (ret.length < longest) ret += suffix.slice(0, longest - ret.length);
    return ret.replace(/[^a-zA-Z0-9]+$/, '');
  }
  return `${parent.slice(0, head - suffix.length)}${createHash('md5').update(parent).digest('hex')}${suffix}`;
}

/** Eventing's OIDC ServiceAccount of a resource (pkg/auth/serviceaccount.go). */
export const oidcServiceAccountName = (group: string, kind: string, name: string): string => childName(name, `-oidc-${group}-${kind}`).toLowerCase();

