// Rendering the LB Deployment for one Gateway from the template, the Gateway
// and its GatewayConfiguration (docs/design.md §4, "Deployment rendering").
//
// The live Deployment is an input only where the design says its values win:
// replicas and resources that are not enforced, the selector (immutable), and
// a NAD annotation that already says the same thing. Everything else is a
// pure function of the inputs, so rendering twice gives the same object.
import { cloneJson } from './clone-json.js';
import { appliedAnnotations, currentState } from './applied-annotations.js';
import { parseCidr } from './cidr.js';
import { selectorMatches } from './label-selector.js';
import { desiredNetworks } from './nad-networks.js';
import { NETWORKS_ANNOTATION } from '../../../api/names.js';
import type {
  Container,
  ContainerArgs,
  Deployment,
  EnvVar,
  Gateway,
  GatewayConfiguration,
  OwnerReference,
  PodAffinityTerm,
  PodSpec,
  PodTemplateSpec,
} from '../../../api/schemas.js';

// The container that needs its own Pod identity (it patches its Pod's status).
// Meridio-2's LB template names it "router".
export const ROUTER_CONTAINER = 'router';
export const GATEWAY_NAME_ENV = 'MERIDIO_GATEWAY_NAME';
import { deploymentName, gatewayNameLabel } from './names.js';
// The ApiServerSource selects LB Deployments by the managed-by label (events/types.ts).
import {
  GATEWAY_API_VERSION,
  GATEWAY_GROUP,
  GATEWAY_KIND,
  LABEL_APP,
  LABEL_GATEWAY_NAME,
  LABEL_MANAGED_BY,
  MANAGED_BY_VALUE as MANAGED_BY,
  READINESS_GATE_IPV4,
  READINESS_GATE_IPV6,
} from '../../../api/names.js';


import type { Settings } from './plan-types.js';

export interface RenderInput {
  template: Deployment;
  templateHash: string;
  gateway: Gateway;
  configuration: GatewayConfiguration;
  settings: Settings;
  live: Deployment | null;
}

export type Rendered = { ok: true; deployment: Deployment } | { ok: false; error: string };

export function ownerReferenceFor(gateway: Gateway): OwnerReference {
  return {
    apiVersion: GATEWAY_API_VERSION,
    kind: GATEWAY_KIND,
    name: gateway.metadata.name,
    uid: gateway.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function controllerOf(deployment: Deployment): OwnerReference | undefined {
  return deployment.metadata.ownerReferences?.find((ref) => ref.controller === true);
}

// Ownership is by uid: a Gateway deleted and re-created under the same name
// must not inherit a Deployment the garbage collector is about to remove.
export function isControlledBy(deployment: Deployment, gateway: Gateway): boolean {
  const controller = controllerOf(deployment);
  return (
    controller !== undefined &&
    controller.kind === GATEWAY_KIND &&
    controller.apiVersion.startsWith(`${GATEWAY_GROUP}/`) &&
    controller.uid === gateway.metadata.uid
  );
}

export function renderDeployment(input: RenderInput): Rendered {
  const { template, gateway, configuration, live } = input;
  const gatewayName = gateway.metadata.name;
  const namespace = gateway.metadata.namespace ?? '';
  const name = deploymentName(gatewayName);
  const infrastructure = gateway.spec.infrastructure;
  // Controller labels are applied last: they carry the selector and the
  // Gateway identity, which neither the template nor the user may change.
  const controllerLabels = { [LABEL_APP]: name, [LABEL_GATEWAY_NAME]: gatewayNameLabel(gatewayName), [LABEL_MANAGED_BY]: MANAGED_BY };

  const podMeta = template.spec.template.metadata ?? {};
  const networks = desiredNetworks({
    templateValue: podMeta.annotations?.[NETWORKS_ANNOTATION],
    attachments: configuration.spec.networkAttachments,
    defaultNamespace: namespace,
    liveValue: live?.spec.template.metadata?.annotations?.[NETWORKS_ANNOTATION],
  });
  if (!networks.ok) return { ok: false, error: networks.error };

  const podLabels = { ...podMeta.labels, ...infrastructure?.labels, ...controllerLabels };
  const podAnnotations: Record<string, string> = { ...podMeta.annotations, ...infrastructure?.annotations };
  delete podAnnotations[NETWORKS_ANNOTATION];
  if (networks.value !== undefined) podAnnotations[NETWORKS_ANNOTATION] = networks.value;

  // Template spec fields other than these three (strategy, minReadySeconds,
  // ...) are rendered as the template has them.
  const { replicas: _replicas, selector: _selector, template: _template, ...templateRest } = template.spec;
  const templateSpec: Record<string, unknown> = cloneJson(templateRest);
  const { horizontalScaling } = configuration.spec;
  const replicas = live !== null && !horizontalScaling.enforceReplicas ? live.spec.replicas : horizontalScaling.replicas;
  const liveSelector = live?.spec.selector;
  const selector =
    liveSelector !== undefined && selectorMatches(liveSelector, podLabels)
      ? cloneJson(liveSelector)
      : { matchLabels: { [LABEL_APP]: name } };

  const podMetadata: NonNullable<PodTemplateSpec['metadata']> = { ...cloneJson(podMeta), labels: podLabels };
  if (Object.keys(podAnnotations).length > 0) podMetadata.annotations = podAnnotations;
  else delete podMetadata.annotations;

  const deployment: Deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace,
      labels: { ...template.metadata.labels, ...infrastructure?.labels, ...controllerLabels },
      annotations: {
        ...template.metadata.annotations,
        ...infrastructure?.annotations,
        ...appliedAnnotations(currentState(gateway, configuration, input.templateHash)),
      },
      ownerReferences: [ownerReferenceFor(gateway)],
    },
    spec: {
      ...templateSpec,
      ...(replicas !== undefined && { replicas }),
      selector,
      template: { metadata: podMetadata, spec: renderPodSpec(input, name) },
    },
  };
  return { ok: true, deployment };
}

function renderPodSpec(input: RenderInput, name: string): PodSpec {
  const { template, gateway, configuration, settings, live } = input;
  // A shallow copy: every field replaced below gets a new value, and only the
  // affinity is changed in place, so only it is copied deep. The rest is
  // shared with the template (inputs are never written to).
  const { serviceAccount: _alias, ...templateSpec } = template.spec.template.spec;
  const spec: PodSpec = { ...templateSpec, serviceAccountName: settings.lbServiceAccount };
  if (spec.affinity !== undefined) spec.affinity = cloneJson(spec.affinity);
  const antiAffinity = spec.affinity?.podAntiAffinity;
  for (const term of antiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []) rewriteAppSelector(term, name);
  for (const weighted of antiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []) {
    rewriteAppSelector(weighted.podAffinityTerm, name);
  }

  const containerArgs = configuration.spec.verticalScaling?.containers ?? [];
  const liveContainers = live?.spec.template.spec.containers ?? [];
  spec.containers = spec.containers.map((container) => {
    // Only containers that declare the variable get its value (Meridio-2):
    // a sidecar added to the template is not handed a variable it never asked for.
    let rendered = setDeclaredEnv(container, { name: GATEWAY_NAME_ENV, value: gateway.metadata.name });
    if (container.name === ROUTER_CONTAINER) {
      // Added when missing; a definition the template already has is kept.
      rendered = addMissingEnv(rendered, fieldRefEnv('POD_NAME', 'metadata.name'));
      rendered = addMissingEnv(rendered, fieldRefEnv('POD_NAMESPACE', 'metadata.namespace'));
      rendered = addMissingEnv(rendered, fieldRefEnv('POD_UID', 'metadata.uid'));
    }
    return withResources(
      rendered,
      containerArgs.find((a) => a.name === container.name),
      liveContainers.find((c) => c.name === container.name),
    );
  });

  const families = new Set(configuration.spec.internalSubnets.map((s) => parseCidr(s.cidr)?.family));
  const ours = new Set([READINESS_GATE_IPV4, READINESS_GATE_IPV6]);
  spec.readinessGates = [
    ...(spec.readinessGates ?? []).filter((g) => !ours.has(g.conditionType)),
    ...(families.has(4) ? [{ conditionType: READINESS_GATE_IPV4 }] : []),
    ...(families.has(6) ? [{ conditionType: READINESS_GATE_IPV6 }] : []),
  ];
  return spec;
}

// Only selectors that list values (In/NotIn) are rewritten: Exists and
// DoesNotExist must keep an empty value list to stay valid.
function rewriteAppSelector(term: PodAffinityTerm, name: string): void {
  const selector = term.labelSelector;
  if (!selector) return;
  if (selector.matchLabels && LABEL_APP in selector.matchLabels) selector.matchLabels[LABEL_APP] = name;
  for (const expression of selector.matchExpressions ?? []) {
    if (expression.key === LABEL_APP && expression.values !== undefined) expression.values = [name];
  }
}

function fieldRefEnv(name: string, fieldPath: string): EnvVar {
  // apiVersion is what the server would default; writing it keeps the
  // rendered object identical to what comes back.
  return { name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } };
}

// Replaces a declared variable in place (so the template's order is kept);
// a container that does not declare it is left alone.
function setDeclaredEnv(container: Container, variable: EnvVar): Container {
  const env = container.env ?? [];
  if (!env.some((e) => e.name === variable.name)) return container;
  return { ...container, env: env.map((e) => (e.name === variable.name ? variable : e)) };
}

function addMissingEnv(container: Container, variable: EnvVar): Container {
  const env = container.env ?? [];
  if (env.some((e) => e.name === variable.name)) return container;
  return { ...container, env: [...env, variable] };
}

// Resources come from the configuration when the container is created (no
// live Deployment, or the container is new in the template) and, with
// enforceResources, on every reconcile. Otherwise the live values win, so a
// VPA or a person may manage them; unlisted containers keep what they have.
//
// A listed container gets exactly what its entry says, as in Meridio-2
// ("omitting fields means no value desired"): no `resources` clears requests
// and limits, no `resizePolicy` clears it. Empty values are rendered (rather
// than leaving the keys out) so that the diff sees them as a change to make.
function withResources(container: Container, args: ContainerArgs | undefined, live: Container | undefined): Container {
  const creating = live === undefined;
  if (args !== undefined && (creating || args.enforceResources)) {
    const out: Container = { ...container };
    const requests = args.resources?.requests;
    const limits = args.resources?.limits;
    out.resources = { ...(requests !== undefined && { requests }), ...(limits !== undefined && { limits }) };
    out.resizePolicy = args.resizePolicy ?? [];
    return out;
  }
  if (live !== undefined) {
    const out: Container = { ...container };
    delete out.resources;
    delete out.resizePolicy;
    if (live.resources !== undefined) out.resources = live.resources;
    if (live.resizePolicy !== undefined) out.resizePolicy = live.resizePolicy;
    return out;
  }
  return container;
}
