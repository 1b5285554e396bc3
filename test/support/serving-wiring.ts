import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ControlPlane } from '../../tools/controlplane/control-plane.js';
import { useClusterInfo } from './cluster.js';
import { startAdapter, type AdapterProcess } from './adapter-process.js';
import { BROKER, type EventWiring } from './broker-install.js';
import { adapterResources } from './event-path.js';
import type { EventingPlane } from './eventing.js';
import { guessKindToResource, pluralOf } from './install.js';
import { GATEWAY, relayToLoopback, type Relay } from './pod-network.js';
import type { ServingOptions } from './serving.js';

// What the Serving e2e files wire the same way around the real Serving and
// Eventing: the function Pod's environment, the Broker reachable from the
// Pod network, and the two ApiServerSource adapters of the install.

/**
 * What a cluster gives the function's Pod: its ServiceAccount's credentials
 * (the controller's kubeconfig, pointed at the Pod network's relay to the API
 * server) and K_SINK, the SinkBinding's injection (read when a Pod starts).
 */
export function podFunctionEnv(controllerKubeconfig: string, scratch: string, sink: { url: string }): ServingOptions['functionEnv'] {
  return async ({ apiServer }) => {
    const kubeconfig = join(scratch, 'function.kubeconfig');
    const config = z.looseObject({ clusters: z.array(z.looseObject({ cluster: z.looseObject({ server: z.string() }) })) }).parse(JSON.parse(readFileSync(controllerKubeconfig, 'utf8')));
    for (const c of config.clusters) c.cluster.server = `https://${apiServer.host}:${apiServer.port}`;
    writeFileSync(kubeconfig, JSON.stringify(config));
    return { KUBECONFIG: kubeconfig, K_SINK: sink.url };
  };
}

/**
 * The Broker's address (what its reconciler will report) and, for K_SINK, a
 * relay to its local listener that the function's Pod can reach, before the
 * Service exists: its first Pod starts as soon as the Service is admitted.
 */
export async function brokerForPods(eventing: EventingPlane, ns: string): Promise<{ brokerUrl: string; podUrl: string; relay: Relay }> {
  const brokerUrl = `http://broker-ingress.knative-eventing.svc.cluster.local/${ns}/${BROKER}`;
  const local = new URL(await eventing.proxy.localAddress(brokerUrl));
  const relay = await relayToLoopback(Number(local.port));
  return { brokerUrl, podUrl: `http://${relay.host}:${relay.port}${local.pathname}`, relay };
}

/**
 * The install's two adapters as processes: the ApiServerSource's, configured
 * as Knative configures it (resource names by its guess, so Gateways,
 * "gatewaies", are skipped), and the gateway-watch ContainerSource's, with the
 * K_SOURCE_CONFIG it ships.
 */
export async function startInstallAdapters(wiring: EventWiring, ns: string, eventing: EventingPlane, sourceKubeconfig: string): Promise<{ guessed: AdapterProcess; gatewayWatch: AdapterProcess }> {
  const resources = await adapterResources(wiring, (apiVersion, kind) => (kind === 'Gateway' ? guessKindToResource(kind) : pluralOf(apiVersion, kind)));
  const guessed = await startAdapter({ kubeconfig: sourceKubeconfig, sink: wiring.brokerUrl, namespaces: [ns], resources, env: eventing.proxyEnv });
  const cs = wiring.objects.find((o) => o.kind === 'ContainerSource');
  const env = (cs?.spec as { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } }).template.spec.containers[0]?.env ?? [];
  const shipped = z.object({ resources: z.array(z.object({ gvr: z.object({ Group: z.string(), Version: z.string(), Resource: z.string() }) })) }).parse(JSON.parse(env.find((e) => e.name === 'K_SOURCE_CONFIG')?.value ?? '{}'));
  const gatewayWatch = await startAdapter({ kubeconfig: sourceKubeconfig, sink: wiring.brokerUrl, namespaces: [ns], resources: shipped.resources.map((r) => ({ group: r.gvr.Group, version: r.gvr.Version, resource: r.gvr.Resource })), env: eventing.proxyEnv });
  return { guessed, gatewayWatch };
}

/** A control plane Serving can run on: fake Nodes, the endpoints controllers Serving's SKS, Route and activator read, and the webhook reached at its endpoint. */
export async function startServingControlPlane(fakeNodes: string[]): Promise<ControlPlane> {
  const cp = await ControlPlane.start({
    fakeNodes,
    extraControllers: ['endpoints-controller', 'endpointslice-controller'],
    aggregatorRouting: true,
    apiServerIps: [GATEWAY],
    log: () => undefined,
  });
  useClusterInfo(cp.info);
  return cp;
}
