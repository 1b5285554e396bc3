import type { V1ClusterRole, V1Role } from '@kubernetes/client-node';
import { resourceOf, type AuditEvent } from '../../tools/controlplane/audit-log.js';

// Least privilege, as the audit-log tests compare it: what a (Cluster)Role
// grants and what an identity used, each as "group resource verb" keys.

function key(group: string, resource: string, verb: string): string {
  return `${group || 'core'} ${resource} ${verb}`;
}

export function grantedKeys(role: V1ClusterRole | V1Role): Set<string> {
  const granted = new Set<string>();
  for (const rule of role.rules ?? []) {
    for (const g of rule.apiGroups ?? []) for (const res of rule.resources ?? []) for (const v of rule.verbs) granted.add(key(g, res, v));
  }
  return granted;
}

/** The resource requests among `events` (non-resource URLs such as /version are not RBAC rules of a ClusterRole's resources). */
export function usedKeys(events: AuditEvent[]): Set<string> {
  return new Set(events.filter((e) => e.objectRef?.resource).map((e) => key(e.objectRef?.apiGroup ?? '', resourceOf(e), e.verb)));
}
