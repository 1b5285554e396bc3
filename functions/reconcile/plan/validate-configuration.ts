// The checks that decide Accepted=False (reason InvalidParameters). Each
// failure is one precise sentence that names the offending value, because it
// is all an operator sees in `kubectl describe gateway`.
import { cidrsOverlap, formatCidr, parseCidr, type Cidr } from './cidr.js';
import { attachmentNetworks, mergeNetworks, networkKey, parseNetworksAnnotation, type NetworkSelection } from './nad-networks.js';
import { NETWORKS_ANNOTATION } from '../../../api/names.js';
import { effectiveParametersRef, refProblem } from './parameters-ref.js';
import type { Deployment, Gateway, GatewayClass, GatewayConfiguration } from '../../../api/schemas.js';

import { GATEWAY_CONFIGURATION_KIND, MERIDIO_GROUP } from '../../../api/names.js';
export const ATTACHMENT_TYPE_NAD = 'NAD';
export const MAX_NETWORK_ATTACHMENTS = 10;
export const MAX_INTERNAL_SUBNETS = 2;

const IPV6_LINK_LOCAL = parseCidr('fe80::/10') as Cidr;

export type Validation = { ok: true; configuration: GatewayConfiguration } | { ok: false; message: string };

// The Gateway's reference first, then the object it points at. Without a
// reference of its own, the GatewayClass's is the default (GEP-1867).
export function validateParameters(
  gateway: Gateway,
  configuration: GatewayConfiguration | null,
  template: Deployment,
  gatewayClass: GatewayClass | null = null,
): Validation {
  const ref = gateway.spec.infrastructure?.parametersRef;
  if (!ref) {
    const fromClass = effectiveParametersRef(gateway, gatewayClass);
    if (fromClass) {
      const problem = refProblem(fromClass);
      if (problem !== null) return { ok: false, message: problem };
      const where = `${GATEWAY_CONFIGURATION_KIND} "${fromClass.namespace ?? ''}/${fromClass.name}" (the default of GatewayClass ${fromClass.className ?? ''})`;
      if (configuration === null) return { ok: false, message: `${where} not found` };
      const invalid = validateConfiguration(configuration, template, gateway.metadata.namespace ?? '');
      return invalid === null ? { ok: true, configuration } : { ok: false, message: `${where}: ${invalid}` };
    }
    return {
      ok: false,
      message: `spec.infrastructure.parametersRef is missing: it must reference a ${GATEWAY_CONFIGURATION_KIND} (group ${MERIDIO_GROUP}), or the GatewayClass must name a default in spec.parametersRef`,
    };
  }
  if (ref.group !== MERIDIO_GROUP || ref.kind !== GATEWAY_CONFIGURATION_KIND) {
    return {
      ok: false,
      message: `unsupported parametersRef group "${ref.group}" kind "${ref.kind}" (expected group "${MERIDIO_GROUP}" kind "${GATEWAY_CONFIGURATION_KIND}")`,
    };
  }
  const namespace = gateway.metadata.namespace ?? '';
  if (configuration === null) {
    return { ok: false, message: `${GATEWAY_CONFIGURATION_KIND} "${namespace}/${ref.name}" not found` };
  }
  const problem = validateConfiguration(configuration, template, namespace);
  if (problem !== null) {
    return { ok: false, message: `${GATEWAY_CONFIGURATION_KIND} "${configuration.metadata.name}": ${problem}` };
  }
  return { ok: true, configuration };
}

// Returns null when valid, else the reason.
export function validateConfiguration(
  configuration: GatewayConfiguration,
  template: Deployment,
  defaultNamespace: string,
): string | null {
  return (
    validateInternalSubnets(configuration) ??
    validateHorizontalScaling(configuration) ??
    validateNetworkAttachments(configuration) ??
    validateVerticalScaling(configuration) ??
    validateMergedNetworks(configuration, template, defaultNamespace)
  );
}

function validateInternalSubnets(configuration: GatewayConfiguration): string | null {
  const subnets = configuration.spec.internalSubnets;
  if (subnets.length === 0) return 'internalSubnets is empty: at least one internal subnet (one per IP family) is required';
  if (subnets.length > MAX_INTERNAL_SUBNETS) {
    return `internalSubnets has ${subnets.length} entries (at most ${MAX_INTERNAL_SUBNETS}: one IPv4 and one IPv6)`;
  }
  const parsed: Array<{ text: string; cidr: Cidr }> = [];
  for (const [i, subnet] of subnets.entries()) {
    const where = `internalSubnets[${i}]`;
    if (subnet.attachmentType !== ATTACHMENT_TYPE_NAD) {
      return `${where}: attachmentType "${subnet.attachmentType}" is not supported (only "${ATTACHMENT_TYPE_NAD}")`;
    }
    const cidr = parseCidr(subnet.cidr);
    if (cidr === null) return `${where}: invalid CIDR "${subnet.cidr}"`;
    if (cidr.prefix === 0) return `${where}: CIDR "${subnet.cidr}" is a default route (0.0.0.0/0 and ::/0 are not allowed)`;
    if (cidrsOverlap(cidr, IPV6_LINK_LOCAL)) {
      return `${where}: CIDR "${subnet.cidr}" is or includes IPv6 link-local addresses (fe80::/10 is not allowed)`;
    }
    for (const earlier of parsed) {
      if (cidrsOverlap(earlier.cidr, cidr)) {
        return `internalSubnets overlap: "${earlier.text}" (${formatCidr(earlier.cidr)}) and "${subnet.cidr}" (${formatCidr(cidr)})`;
      }
      if (earlier.cidr.family === cidr.family) {
        return `internalSubnets "${earlier.text}" and "${subnet.cidr}" are both IPv${cidr.family}: use one subnet per IP family`;
      }
    }
    parsed.push({ text: subnet.cidr, cidr });
  }
  return null;
}

function validateHorizontalScaling(configuration: GatewayConfiguration): string | null {
  const { replicas } = configuration.spec.horizontalScaling;
  return replicas < 1 ? `horizontalScaling.replicas must be at least 1 (got ${replicas})` : null;
}

function describeNad(namespace: string, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

function validateNetworkAttachments(configuration: GatewayConfiguration): string | null {
  const attachments = configuration.spec.networkAttachments;
  if (attachments.length > MAX_NETWORK_ATTACHMENTS) {
    return `networkAttachments has ${attachments.length} entries (at most ${MAX_NETWORK_ATTACHMENTS})`;
  }
  const interfaces = new Map<string, number>();
  for (const [i, attachment] of attachments.entries()) {
    const where = `networkAttachments[${i}]`;
    if (attachment.type !== ATTACHMENT_TYPE_NAD) {
      return `${where}: type "${attachment.type}" is not supported (only "${ATTACHMENT_TYPE_NAD}")`;
    }
    const nad = attachment.nad;
    if (!nad) return `${where}: nad is missing (required when type is "${ATTACHMENT_TYPE_NAD}")`;
    if (nad.name === '') return `${where}: nad.name is missing (interface "${nad.interface}")`;
    if (nad.interface === '') {
      return `${where}: nad.interface is missing for NAD "${describeNad(nad.namespace, nad.name)}"`;
    }
    const first = interfaces.get(nad.interface);
    if (first !== undefined) {
      return `${where}: duplicate interface name "${nad.interface}" (already used by networkAttachments[${first}])`;
    }
    interfaces.set(nad.interface, i);
  }
  return null;
}

function validateVerticalScaling(configuration: GatewayConfiguration): string | null {
  for (const [i, container] of (configuration.spec.verticalScaling?.containers ?? []).entries()) {
    const claims = container.resources?.claims ?? [];
    if (claims.length > 0) {
      const names = claims.map((c) => `"${c.name}"`).join(', ');
      return `verticalScaling.containers[${i}] ("${container.name}"): resource claims are not supported (got ${names})`;
    }
  }
  return null;
}

// Merging follows render-deployment exactly, so the Deployment we would write
// is the one that was checked: a template network that the configuration
// re-attaches (same namespace, name and interface) is replaced, not
// duplicated; the same NAD on another interface is a second attachment.
function validateMergedNetworks(
  configuration: GatewayConfiguration,
  template: Deployment,
  defaultNamespace: string,
): string | null {
  const templateValue = template.spec.template.metadata?.annotations?.[NETWORKS_ANNOTATION];
  let templateNetworks: NetworkSelection[] = [];
  if (templateValue !== undefined) {
    const parsed = parseNetworksAnnotation(templateValue);
    if (!parsed.ok) return `the LB template's ${NETWORKS_ANNOTATION} annotation is invalid: ${parsed.error}`;
    templateNetworks = parsed.networks;
  }
  const fromConfiguration = new Set(
    attachmentNetworks(configuration.spec.networkAttachments).map((n) => networkKey(n, defaultNamespace)),
  );
  const merged = mergeNetworks(templateNetworks, attachmentNetworks(configuration.spec.networkAttachments), defaultNamespace);
  const seen = new Map<string, NetworkSelection>();
  for (const network of merged) {
    if (!network.interface) continue;
    const earlier = seen.get(network.interface);
    if (earlier !== undefined) {
      const origin = (n: NetworkSelection): string =>
        `${fromConfiguration.has(networkKey(n, defaultNamespace)) ? 'networkAttachments' : 'the LB template'} NAD "${n.namespace || defaultNamespace}/${n.name}"`;
      return `duplicate interface name "${network.interface}" after merging with the LB template: used by ${origin(earlier)} and ${origin(network)}`;
    }
    seen.set(network.interface, network);
  }
  return null;
}
