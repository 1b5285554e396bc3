import type { ObserveReads } from './shared-reads.js';
import { deploymentName } from './plan/names.js';
import { readsOf } from './plan/gateway-reads.js';
import { type ObserveHint } from '../../events/observe-hint.js';
import type { Observed } from './plan/plan-types.js';
import { routeScope } from './plan/route-attachment.js';
import type { GatewayClass, GatewayConfiguration } from '../../api/schemas.js';

/**
 * Reads the current state of one Gateway and everything its plan depends on
 * (docs/design.md §2). The first round reads, in parallel, what the key names
 * (the Gateway, its Deployment, the routes) and what the event's hint names
 * (the class, the GatewayConfiguration, the namespaces for a label selector).
 * Whatever the Gateway as read names differently, or the hint left out, is
 * read in a second round (and a third for a class default learnt only from
 * the class). A reconcile with a right hint therefore costs one round trip; a
 * wrong or missing hint costs rounds, never correctness.
 */
export async function observe(
  api: ObserveReads,
  key: { namespace: string; name: string },
  hint?: ObserveHint,
  // With the PDB setting on, the LB Deployment's PDB is read in the first round too.
  reads: { pdb: boolean } = { pdb: false },
): Promise<Observed> {
  const wide = hint?.routeScope !== undefined && hint.routeScope !== 'same';
  const [gateway, deployment, firstRoutes, hintedClass, hintedConfiguration, hintedNamespaces, pdb] = await Promise.all([
    api.getGateway(key.namespace, key.name),
    api.getDeployment(key.namespace, deploymentName(key.name)),
    wide ? api.listL34Routes() : api.listL34Routes(key.namespace),
    hint ? api.getGatewayClass(hint.gatewayClassName) : undefined,
    hint?.configuration ? api.getGatewayConfiguration(hint.configuration.namespace, hint.configuration.name) : undefined,
    hint?.routeScope === 'selector' ? api.listNamespaces() : undefined,
    reads.pdb ? api.getPodDisruptionBudget(key.namespace, deploymentName(key.name)) : undefined,
  ]);
  const namespaceRoutes = wide ? firstRoutes.filter((r) => r.metadata.namespace === key.namespace) : firstRoutes;
  const base = { key, deployment, ...(pdb !== undefined && { pdb }) };
  if (!gateway) return { ...base, routes: namespaceRoutes, namespaces: null, gateway: null, gatewayClass: null, gatewayConfiguration: null };

  // Reads made on the hint's word count only where the Gateway agrees.
  let gatewayClass: GatewayClass | null | undefined = hint?.gatewayClassName === gateway.spec.gatewayClassName ? hintedClass : undefined;
  const configurationFor = async (want: { namespace: string; name: string } | null): Promise<GatewayConfiguration | null> => {
    if (want === null) return null;
    const had = hint?.configuration;
    if (hintedConfiguration !== undefined && had && had.namespace === want.namespace && had.name === want.name) return hintedConfiguration;
    return api.getGatewayConfiguration(want.namespace, want.name);
  };

  // Known before the class only when the Gateway names its own configuration.
  const early = readsOf(gateway, gatewayClass);
  const scope = routeScope(gateway);
  const [readClass, earlyConfiguration, routes, namespaces] = await Promise.all([
    gatewayClass === undefined ? api.getGatewayClass(gateway.spec.gatewayClassName) : gatewayClass,
    early ? configurationFor(early.configuration) : undefined,
    scope === 'same' ? namespaceRoutes : wide ? firstRoutes : api.listL34Routes(),
    scope !== 'selector' ? null : (hintedNamespaces ?? api.listNamespaces()),
  ]);
  gatewayClass = readClass;
  // No reference of its own: the class's default, which only the class names.
  const gatewayConfiguration = earlyConfiguration !== undefined ? earlyConfiguration : await configurationFor(readsOf(gateway, gatewayClass)?.configuration ?? null);
  return { ...base, routes, namespaces, gateway, gatewayClass, gatewayConfiguration };
}
