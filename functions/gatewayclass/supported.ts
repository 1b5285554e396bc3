// What a GatewayClass of ours advertises.
import { GATEWAY_GROUP } from '../../api/names.js';

/**
 * The Gateway API release this controller is built and tested against: the
 * CRDs pinned in tools/controlplane/pins.json (a unit test keeps the two
 * equal). Any patch release of this minor version is supported.
 */
export const SUPPORTED_GATEWAY_API = 'v1.6.3';

/** The CRD whose bundle-version annotation says which Gateway API release is installed. */
export const GATEWAY_CLASS_CRD = 'gatewayclasses.gateway.networking.k8s.io';
export const BUNDLE_VERSION_ANNOTATION = `${GATEWAY_GROUP}/bundle-version`;

/**
 * Gateway API feature names (sigs.k8s.io/gateway-api pkg/features), sorted as
 * status.supportedFeatures must be. Gateway: the core Gateway resource (with
 * L34Routes instead of the HTTP/TCP/UDP route kinds, which this controller
 * does not serve). GatewayInfrastructure: spec.infrastructure labels,
 * annotations and parametersRef reach the generated LB Deployment and Pods.
 */
export const SUPPORTED_FEATURES: readonly string[] = ['Gateway', 'GatewayInfrastructure'];

/** "v1.6.3" -> "v1.6"; undefined for anything else. */
export function minorOf(version: string): string | undefined {
  const m = /^v(\d+)\.(\d+)(\.\d+)?(-[0-9A-Za-z.-]+)?$/.exec(version.trim());
  return m ? `v${m[1]}.${m[2]}` : undefined;
}
