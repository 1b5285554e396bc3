import { randomUUID } from 'node:crypto';
import { CloudEvent } from 'cloudevents';
import type { Named, ReconcileData } from './incoming.js';
import type { GatewayKey } from '../api/gateway-key.js';
import { API_SOURCE_RESOURCE_TYPES, PING_TYPE, RECONCILE_SOURCE, RECONCILE_TYPE } from './types.js';

// Constructors for the events the controller emits (reconcile requests) and,
// for the local event source and the tests, the ones Knative would send.

/**
 * A reconcile request; the observe hint rides along in the data when given
 * (observe-hint.ts). `also`: further Gateways of the key's namespace, a
 * fan-out batch (the subject names the first).
 */
export function reconcileEvent(key: GatewayKey, cause?: ReconcileData['cause'], hint?: ReconcileData['hint'], also: readonly Named[] = []): CloudEvent<ReconcileData> {
  if (also.some((g) => g.key.namespace !== key.namespace)) throw new Error(`a reconcile request names Gateways of one namespace (${key.namespace}) only`);
  const rest = also.map((g) => ({ name: g.key.name, ...(g.hint ? { hint: g.hint } : {}) }));
  return new CloudEvent<ReconcileData>({
    id: randomUUID(),
    type: RECONCILE_TYPE,
    source: RECONCILE_SOURCE,
    subject: `namespaces/${key.namespace}/gateways/${key.name}`,
    datacontenttype: 'application/json',
    data: { namespace: key.namespace, name: key.name, ...(cause ? { cause } : {}), ...(hint ? { hint } : {}), ...(rest.length > 0 ? { also: rest } : {}) },
  });
}

export function pingEvent(source = '/meridio-2/resync'): CloudEvent<Record<string, never>> {
  return new CloudEvent({ id: randomUUID(), type: PING_TYPE, source, datacontenttype: 'application/json', data: {} });
}

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}

/** Plural resource name as the API server spells it in paths (for the subject). */
function plural(kind: string): string {
  const lower = kind.toLowerCase();
  return lower.endsWith('s') ? `${lower}es` : `${lower}s`;
}

/**
 * An ApiServerSource Resource-mode event, shaped as the receive adapter sends
 * it: the full object as data, the kind/name/namespace/apiversion extensions,
 * and the subject naming the object's path.
 */
export function apiServerEvent(action: keyof typeof API_SOURCE_RESOURCE_TYPES, object: KubeObject, source: string): CloudEvent<KubeObject> {
  const ns = object.metadata.namespace ?? '';
  return new CloudEvent<KubeObject>({
    id: randomUUID(),
    type: API_SOURCE_RESOURCE_TYPES[action],
    source,
    subject: `/apis/${object.apiVersion}/namespaces/${ns}/${plural(object.kind)}/${object.metadata.name}`,
    datacontenttype: 'application/json',
    data: object,
    kind: object.kind,
    name: object.metadata.name,
    namespace: ns,
    apiversion: object.apiVersion,
  });
}
