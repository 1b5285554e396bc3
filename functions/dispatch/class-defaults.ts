import type { GatewayKey } from '../../api/gateway-key.js';
import { GATEWAY_CONFIGURATION_KIND, MERIDIO_GROUP } from '../../api/names.js';
import type { Gateway, GatewayClass } from '../../api/schemas.js';
import { keyOf } from './gateway-keys.js';

// A GatewayClass's spec.parametersRef is the default GatewayConfiguration of
// its Gateways that have none of their own. Pure rules for who is affected
// when such a configuration changes.

/** Names of the classes whose default is the GatewayConfiguration namespace/name. */
export function classesDefaultingTo(classes: GatewayClass[], namespace: string, name: string): string[] {
  return classes
    .filter((gc) => {
      const ref = gc.spec.parametersRef;
      return ref !== undefined && ref.group === MERIDIO_GROUP && ref.kind === GATEWAY_CONFIGURATION_KIND && ref.namespace === namespace && ref.name === name;
    })
    .map((gc) => gc.metadata.name);
}

/** Gateways of those classes without a reference of their own (their own reference wins). */
export function gatewaysDefaultedBy(gateways: Gateway[], classNames: string[]): GatewayKey[] {
  return gateways
    .filter((gw) => classNames.includes(gw.spec.gatewayClassName) && gw.spec.infrastructure?.parametersRef === undefined)
    .map(keyOf);
}
