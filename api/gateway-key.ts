// What names one Gateway, and the Kubernetes name rules it is parsed with:
// every layer (event contracts, dispatch, the reconcile) speaks of a Gateway
// by this key.
import { z } from 'zod';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const ObjectName = z.string().min(1).max(253).regex(DNS_SUBDOMAIN, 'must be a DNS subdomain (lower case, digits, "-" and ".")');
export const NamespaceName = z.string().min(1).max(63).regex(DNS_LABEL, 'must be a DNS label (lower case, digits and "-")');

export const GatewayKey = z.strictObject({ namespace: NamespaceName, name: ObjectName });
export type GatewayKey = z.infer<typeof GatewayKey>;

/** `namespace/name`, for logs and coalescing. */
export const keyText = (k: GatewayKey): string => `${k.namespace}/${k.name}`;
