// Names and label values derived from a Gateway's name. A Gateway name may be
// 253 characters long, but a label value (and so the LB Deployment's name,
// which is also its `app` label and selector) is at most 63. A name that fits
// is used unchanged; a longer one is cut and given a stable hash of the whole
// name, so the same Gateway always maps to the same value and two long names
// that share a prefix do not collide.
import { sha256Hex } from './canonical-json.js';

export const LABEL_VALUE_MAX = 63;
export const DEPLOYMENT_PREFIX = 'sllbr-';
const HASH_LENGTH = 8;

export function boundedName(value: string, max: number): string {
  if (value.length <= max) return value;
  const hash = sha256Hex(value, HASH_LENGTH);
  // The cut must still end in an alphanumeric character before the "-".
  const head = value.slice(0, max - HASH_LENGTH - 1).replace(/[^a-zA-Z0-9]+$/, '');
  return `${head}-${hash}`;
}

/** sllbr-<gateway>, bounded so that it is a valid `app` label value too. */
export function deploymentName(gatewayName: string): string {
  return boundedName(`${DEPLOYMENT_PREFIX}${gatewayName}`, LABEL_VALUE_MAX);
}

/** The value of gateway.networking.k8s.io/gateway-name. */
export function gatewayNameLabel(gatewayName: string): string {
  return boundedName(gatewayName, LABEL_VALUE_MAX);
}
