// The names this controller shares with the API server and with other tools:
// API groups and versions, kinds, label and annotation keys, condition types.
// One place, so that a key is spelled once (docs/operations.md lists them for
// operators, and a static test checks that it does).

export const GATEWAY_GROUP = 'gateway.networking.k8s.io';
export const GATEWAY_API_VERSION = `${GATEWAY_GROUP}/v1`;
export const GATEWAY_KIND = 'Gateway';
export const GATEWAY_CLASS_KIND = 'GatewayClass';

export const MERIDIO_GROUP = 'meridio-2.nordix.org';
export const GATEWAY_CONFIGURATION_KIND = 'GatewayConfiguration';
export const L34ROUTE_KIND = 'L34Route';

export const DEFAULT_CONTROLLER_NAME = `${MERIDIO_GROUP}/gateway-controller`;

// Labels on the LB Deployment and its Pods.
export const LABEL_APP = 'app';
export const LABEL_GATEWAY_NAME = `${GATEWAY_GROUP}/gateway-name`;
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = `gateway-controller.${MERIDIO_GROUP}`;

// Annotations: the record of the applied inputs (docs/design.md §6), the
// admission record, and Multus's network list.
export const APPLIED_CONFIGURATION_NAME = `${MERIDIO_GROUP}/applied-gatewayconfiguration-name`;
export const APPLIED_CONFIGURATION_UID = `${MERIDIO_GROUP}/applied-gatewayconfiguration-uid`;
export const APPLIED_CONFIGURATION_GENERATION = `${MERIDIO_GROUP}/applied-gatewayconfiguration-generation`;
export const APPLIED_GATEWAY_GENERATION = `${MERIDIO_GROUP}/applied-gateway-generation`;
export const TEMPLATE_HASH = `${MERIDIO_GROUP}/template-hash`;
export const ADMITTED_SPEC_ANNOTATION = `${MERIDIO_GROUP}/admitted-spec`;
export const NETWORKS_ANNOTATION = 'k8s.v1.cni.cncf.io/networks';

// Condition types (docs/design.md §5) and the LB Pods' readiness gates.
export const CONDITION_ACCEPTED = 'Accepted';
export const CONDITION_PROGRAMMED = 'Programmed';
export const CONDITION_APPLIED = `${MERIDIO_GROUP}/GatewayConfigurationApplied`;
export const CONDITION_LB_AVAILABLE = `${MERIDIO_GROUP}/LoadBalancerAvailable`;
export const READINESS_GATE_IPV4 = `${MERIDIO_GROUP}/ipv4-connectivity`;
export const READINESS_GATE_IPV6 = `${MERIDIO_GROUP}/ipv6-connectivity`;
