import { GATEWAY_CONFIGURATION_KIND, MERIDIO_GROUP } from '../api-names.js';
import type { KubeApi } from '../kube/kube-api.js';
import { deploymentName } from './plan/names.js';
import { effectiveParametersRef, readableRef } from './plan/parameters-ref.js';
import type { Observed } from './plan/plan-types.js';
import type { Settings } from './plan/render-deployment.js';
import { routeScope } from './plan/route-attachment.js';
import type { Template } from './template.js';

/**
 * Reads the current state of one Gateway and everything its plan depends on.
 * Two rounds of parallel reads: what the key alone names (Gateway, its
 * Deployment, the namespace's routes), then what the Gateway names (its
 * class and its GatewayConfiguration, and, only when a listener admits routes
 * from other namespaces, every namespace's routes and, for a label selector,
 * the namespaces).
 */
export async function observe(
  api: KubeApi,
  key: { namespace: string; name: string },
  context: { template: Template; settings: Settings; now: string },
): Promise<Observed> {
  const [gateway, deployment, namespaceRoutes] = await Promise.all([
    api.getGateway(key.namespace, key.name),
    api.getDeployment(key.namespace, deploymentName(key.name)),
    api.listL34Routes(key.namespace),
  ]);
  const base = { key, deployment, template: context.template, settings: context.settings, now: context.now };
  if (!gateway) return { ...base, routes: namespaceRoutes, namespaces: null, gateway: null, gatewayClass: null, gatewayConfiguration: null };
  const ref = gateway.spec.infrastructure?.parametersRef;
  // A wrong group or kind is the planner's to report; only a well-formed
  // reference is worth a read.
  const wantsConfiguration = ref !== undefined && ref.group === MERIDIO_GROUP && ref.kind === GATEWAY_CONFIGURATION_KIND;
  const scope = routeScope(gateway);
  const [gatewayClass, gatewayConfiguration, allRoutes, namespaces] = await Promise.all([
    api.getGatewayClass(gateway.spec.gatewayClassName),
    wantsConfiguration ? api.getGatewayConfiguration(key.namespace, ref.name) : Promise.resolve(null),
    scope === 'same' ? Promise.resolve(null) : api.listL34Routes(),
    scope === 'selector' ? api.listNamespaces() : Promise.resolve(null),
  ]);
  // No reference of its own: the class's default, which only the class names.
  const classRef = ref === undefined ? effectiveParametersRef(gateway, gatewayClass) : undefined;
  const configuration = readableRef(classRef) ? await api.getGatewayConfiguration(classRef.namespace, classRef.name) : gatewayConfiguration;
  return { ...base, routes: allRoutes ?? namespaceRoutes, namespaces, gateway, gatewayClass, gatewayConfiguration: configuration };
}
