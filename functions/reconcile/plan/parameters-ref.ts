// Which GatewayConfiguration a Gateway is rendered from (GEP-1867): its own
// spec.infrastructure.parametersRef when it has one, else its GatewayClass's
// spec.parametersRef. A Gateway's reference is local to its namespace; a
// class is cluster-scoped, so its reference must name the namespace.
import { GATEWAY_CONFIGURATION_KIND, MERIDIO_GROUP } from '../../../api/names.js';
import type { Gateway, GatewayClass } from '../../../api/schemas.js';

export interface EffectiveRef {
  group: string;
  kind: string;
  name: string;
  /** Where the GatewayConfiguration is looked up; undefined when a class reference lacks it. */
  namespace: string | undefined;
  source: 'Gateway' | 'GatewayClass';
  /** The class's name when source is GatewayClass, for messages. */
  className?: string;
}

export function effectiveParametersRef(gateway: Gateway, gatewayClass: GatewayClass | null): EffectiveRef | undefined {
  const own = gateway.spec.infrastructure?.parametersRef;
  if (own) return { group: own.group, kind: own.kind, name: own.name, namespace: gateway.metadata.namespace ?? '', source: 'Gateway' };
  return gatewayClass === null ? undefined : classParametersRef(gatewayClass);
}

/** A GatewayClass's own default (its spec.parametersRef), if it names one. */
export function classParametersRef(gatewayClass: GatewayClass): EffectiveRef | undefined {
  const ref = gatewayClass.spec.parametersRef;
  if (!ref) return undefined;
  return { group: ref.group, kind: ref.kind, name: ref.name, namespace: ref.namespace, source: 'GatewayClass', className: gatewayClass.metadata.name };
}

/** A reference worth a read: our group and kind, with a namespace. */
export function readableRef(ref: EffectiveRef | undefined): ref is EffectiveRef & { namespace: string } {
  return ref !== undefined && ref.group === MERIDIO_GROUP && ref.kind === GATEWAY_CONFIGURATION_KIND && ref.namespace !== undefined && ref.namespace !== '';
}

/** Why a reference is unusable, or null when it is well-formed (the object may still be missing). */
export function refProblem(ref: EffectiveRef): string | null {
  const where = ref.source === 'Gateway' ? 'spec.infrastructure.parametersRef' : `GatewayClass ${ref.className ?? ''} spec.parametersRef`;
  if (ref.group !== MERIDIO_GROUP || ref.kind !== GATEWAY_CONFIGURATION_KIND) {
    return `${where}: unsupported parametersRef group "${ref.group}" kind "${ref.kind}" (expected group "${MERIDIO_GROUP}" kind "${GATEWAY_CONFIGURATION_KIND}")`;
  }
  if (ref.namespace === undefined || ref.namespace === '') {
    return `${where}: namespace is missing (a ${GATEWAY_CONFIGURATION_KIND} is namespaced, so a GatewayClass must name its namespace)`;
  }
  return null;
}
