// A Gateway of one of our classes, as tests, benchmarks and demos create it:
// one TCP listener (the Gateway API requires one; Meridio-2 ignores it) and,
// optionally, a parametersRef to a GatewayConfiguration.
export function gatewayBody(name: string, className: string, configName?: string, infra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name },
    spec: {
      gatewayClassName: className,
      ...(configName || Object.keys(infra).length > 0
        ? { infrastructure: { ...infra, ...(configName ? { parametersRef: { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: configName } } : {}) } }
        : {}),
      listeners: [{ name: 'default', protocol: 'TCP', port: 80 }],
    },
  };
}

/** An L34Route with one parentRef (the Gateway, in another namespace when given) and the VIPs as /32 or /128 destinations. */
export function routeBody(name: string, gateway: string, vips: string[], gatewayNamespace?: string): Record<string, unknown> {
  return {
    apiVersion: 'meridio-2.nordix.org/v1alpha1',
    kind: 'L34Route',
    metadata: { name },
    spec: {
      parentRefs: [{ name: gateway, ...(gatewayNamespace ? { namespace: gatewayNamespace } : {}) }],
      destinationCIDRs: vips,
      protocols: ['TCP'],
      priority: 1,
      destinationPorts: ['80'],
      sourceCIDRs: ['0.0.0.0/0'],
      sourcePorts: ['any'],
    },
  };
}
