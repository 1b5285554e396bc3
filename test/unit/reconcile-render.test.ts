import { APPLIED_CONFIGURATION_GENERATION, TEMPLATE_HASH as TEMPLATE_HASH_KEY } from '../../api/names.js';
import {
  ROUTER_CONTAINER,
  renderDeployment,
  type RenderInput,
} from '../../functions/reconcile/plan/render-deployment.js';
import { DeploymentSchema, type Container, type Deployment } from '../../api/schemas.js';
import {
  CONTROLLER,
  GW,
  GW_UID,
  LB_SERVICE_ACCOUNT,
  NAD_ANNOTATION,
  NS,
  TEMPLATE_HASH,
  gateway,
  gatewayConfiguration,
  simulateServer,
  templateDeployment,
} from './reconcile-fixtures.js';

function input(overrides: Partial<RenderInput> = {}): RenderInput {
  return {
    template: templateDeployment(),
    templateHash: TEMPLATE_HASH,
    gateway: gateway(),
    configuration: gatewayConfiguration(),
    settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT },
    live: null,
    ...overrides,
  };
}

function render(overrides: Partial<RenderInput> = {}): Deployment {
  const result = renderDeployment(input(overrides));
  if (!result.ok) throw new Error(result.error);
  return result.deployment;
}

function container(d: Deployment, name: string): Container {
  const found = d.spec.template.spec.containers.find((c) => c.name === name);
  if (!found) throw new Error(`no container ${name}`);
  return found;
}

function mutateLive(d: Deployment, mutate: (d: Deployment) => void): Deployment {
  const copy = structuredClone(d);
  mutate(copy);
  return DeploymentSchema.parse(copy);
}

describe('renderDeployment: identity and ownership', () => {
  const d = render();

  it('names the Deployment sllbr-<gateway> in the Gateway namespace', () => {
    expect(d.metadata.name).toBe(`sllbr-${GW}`);
    expect(d.metadata.namespace).toBe(NS);
    expect(d.apiVersion).toBe('apps/v1');
    expect(d.kind).toBe('Deployment');
  });

  it('sets a controller ownerReference to the Gateway', () => {
    expect(d.metadata.ownerReferences).toEqual([
      { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: GW, uid: GW_UID, controller: true, blockOwnerDeletion: true },
    ]);
  });

  it('carries no server-owned metadata from the template', () => {
    expect(d.metadata).not.toHaveProperty('resourceVersion');
    expect(d.metadata.name).not.toBe('stateless-load-balancer');
  });

  it('stamps the applied-state annotations on the Deployment only', () => {
    expect(d.metadata.annotations?.[APPLIED_CONFIGURATION_GENERATION]).toBe('1');
    expect(d.metadata.annotations?.[TEMPLATE_HASH_KEY]).toBe(TEMPLATE_HASH);
    expect(Object.keys(d.spec.template.metadata?.annotations ?? {}).some((k) => k.includes('applied'))).toBe(false);
  });
});

describe('renderDeployment: labels and annotations', () => {
  const controllerLabels = {
    app: `sllbr-${GW}`,
    'gateway.networking.k8s.io/gateway-name': GW,
    'app.kubernetes.io/managed-by': 'gateway-controller.meridio-2.nordix.org',
  };

  it('sets the controller labels on the Deployment and the pod template', () => {
    const d = render();
    expect(d.metadata.labels).toEqual({ component: 'lb', ...controllerLabels });
    expect(d.spec.template.metadata?.labels).toEqual({ component: 'lb', ...controllerLabels });
  });

  it('merges infrastructure labels and annotations over the template, controller labels winning', () => {
    const gw = gateway({
      labels: { component: 'edge', team: 'blue', app: 'hijack', 'gateway.networking.k8s.io/gateway-name': 'x' },
      annotations: { 'prometheus.io/scrape': 'false', note: 'hi', [NAD_ANNOTATION]: '[]' },
    });
    const d = render({ gateway: gw });
    for (const labels of [d.metadata.labels, d.spec.template.metadata?.labels]) {
      expect(labels).toEqual({ component: 'edge', team: 'blue', ...controllerLabels });
    }
    expect(d.metadata.annotations).toMatchObject({ 'prometheus.io/scrape': 'false', note: 'hi' });
    expect(d.spec.template.metadata?.annotations).toMatchObject({ 'prometheus.io/scrape': 'false', note: 'hi' });
    // The NAD annotation is the controller's, not the user's.
    expect(d.spec.template.metadata?.annotations?.[NAD_ANNOTATION]).not.toBe('[]');
  });
});

describe('renderDeployment: selector and anti-affinity', () => {
  it('selects app=sllbr-<gateway>', () => {
    expect(render().spec.selector).toEqual({ matchLabels: { app: `sllbr-${GW}` } });
  });

  it('keeps a live selector that still matches the pod labels (the selector is immutable)', () => {
    const live = mutateLive(render(), (d) => {
      d.spec.selector = { matchLabels: { app: `sllbr-${GW}`, component: 'lb' } };
    });
    expect(render({ live }).spec.selector).toEqual({ matchLabels: { app: `sllbr-${GW}`, component: 'lb' } });
  });

  it('replaces a live selector that no longer matches', () => {
    const live = mutateLive(render(), (d) => {
      d.spec.selector = { matchLabels: { app: 'something-else' } };
    });
    expect(render({ live }).spec.selector).toEqual({ matchLabels: { app: `sllbr-${GW}` } });
  });

  it('rewrites the anti-affinity app values, required and preferred, leaving Exists alone', () => {
    const template = templateDeployment((raw) => {
      const podSpec = (raw.spec as { template: { spec: Record<string, unknown> } }).template.spec;
      podSpec.affinity = {
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            {
              labelSelector: {
                matchLabels: { app: 'stateless-load-balancer', tier: 'x' },
                matchExpressions: [
                  { key: 'app', operator: 'In', values: ['stateless-load-balancer'] },
                  { key: 'app', operator: 'Exists' },
                  { key: 'tier', operator: 'In', values: ['x'] },
                ],
              },
              topologyKey: 'kubernetes.io/hostname',
            },
          ],
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 10,
              podAffinityTerm: {
                labelSelector: { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['a', 'b'] }] },
                topologyKey: 'zone',
              },
            },
          ],
        },
      };
    });
    const anti = render({ template }).spec.template.spec.affinity?.podAntiAffinity;
    expect(anti?.requiredDuringSchedulingIgnoredDuringExecution?.[0]?.labelSelector).toEqual({
      matchLabels: { app: `sllbr-${GW}`, tier: 'x' },
      matchExpressions: [
        { key: 'app', operator: 'In', values: [`sllbr-${GW}`] },
        { key: 'app', operator: 'Exists' },
        { key: 'tier', operator: 'In', values: ['x'] },
      ],
    });
    expect(anti?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm.labelSelector).toEqual({
      matchExpressions: [{ key: 'app', operator: 'NotIn', values: [`sllbr-${GW}`] }],
    });
  });
});

describe('renderDeployment: environment and service account', () => {
  const d = render();
  const fieldRef = (fieldPath: string) => ({ valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } });

  it('sets MERIDIO_GATEWAY_NAME in place in the containers that declare it, and adds it to none (Meridio-2)', () => {
    expect(container(d, 'stateless-lb').env?.[0]).toEqual({ name: 'MERIDIO_GATEWAY_NAME', value: GW });
    for (const name of ['router', 'nfqlb']) {
      expect(container(d, name).env?.some((e) => e.name === 'MERIDIO_GATEWAY_NAME') ?? false).toBe(false);
    }
  });

  it('gives the router its Pod identity and no other container', () => {
    expect(ROUTER_CONTAINER).toBe('router');
    expect(container(d, 'router').env).toEqual([
      { name: 'MERIDIO_LOG_LEVEL', value: 'info' },
      { name: 'POD_NAME', ...fieldRef('metadata.name') },
      { name: 'POD_NAMESPACE', ...fieldRef('metadata.namespace') },
      { name: 'POD_UID', ...fieldRef('metadata.uid') },
    ]);
    for (const name of ['stateless-lb', 'nfqlb']) {
      expect(container(d, name).env?.some((e) => e.name.startsWith('POD_')) ?? false).toBe(false);
    }
  });

  it('keeps a custom POD_NAME the template defines for the router, and adds only the missing ones (Meridio-2)', () => {
    const template = templateDeployment((raw) => {
      const podSpec = (raw.spec as { template: { spec: { containers: Array<Record<string, unknown>> } } }).template.spec;
      podSpec.containers[1]!.env = [{ name: 'POD_NAME', value: 'static' }];
    });
    expect(container(render({ template }), 'router').env).toEqual([
      { name: 'POD_NAME', value: 'static' },
      { name: 'POD_NAMESPACE', ...fieldRef('metadata.namespace') },
      { name: 'POD_UID', ...fieldRef('metadata.uid') },
    ]);
  });

  it('uses the configured LB ServiceAccount', () => {
    expect(d.spec.template.spec.serviceAccountName).toBe(LB_SERVICE_ACCOUNT);
    const template = templateDeployment((raw) => {
      (raw.spec as { template: { spec: Record<string, unknown> } }).template.spec.serviceAccount = 'old';
    });
    expect(render({ template }).spec.template.spec).not.toHaveProperty('serviceAccount');
  });
});

describe('renderDeployment: replicas', () => {
  const scaled = (enforceReplicas: boolean) => gatewayConfiguration({ horizontalScaling: { replicas: 3, enforceReplicas } });
  const live = mutateLive(render(), (d) => {
    d.spec.replicas = 7;
  });

  it('uses the configured replicas on create, enforced or not', () => {
    expect(render({ configuration: scaled(true) }).spec.replicas).toBe(3);
    expect(render({ configuration: scaled(false) }).spec.replicas).toBe(3);
  });

  it('defaults to 2 replicas', () => {
    expect(render({ configuration: gatewayConfiguration() }).spec.replicas).toBe(2);
  });

  it('enforces replicas on update when enforceReplicas', () => {
    expect(render({ configuration: scaled(true), live }).spec.replicas).toBe(3);
  });

  it('keeps the live replicas when not enforced', () => {
    expect(render({ configuration: scaled(false), live }).spec.replicas).toBe(7);
  });
});

describe('renderDeployment: resources', () => {
  const vertical = (enforceResources: boolean) =>
    gatewayConfiguration({
      verticalScaling: {
        containers: [
          {
            name: 'router',
            enforceResources,
            resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2' } },
            resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'NotRequired' }],
          },
        ],
      },
    });
  const liveWith = (cpu: string) =>
    mutateLive(render(), (d) => {
      for (const c of d.spec.template.spec.containers) c.resources = { requests: { cpu } };
    });

  it('applies the configured resources on create, enforced or not; unlisted containers get the template values', () => {
    for (const enforce of [true, false]) {
      const d = render({ configuration: vertical(enforce) });
      expect(container(d, 'router').resources).toEqual({ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2' } });
      expect(container(d, 'router').resizePolicy).toEqual([{ resourceName: 'cpu', restartPolicy: 'NotRequired' }]);
      expect(container(d, 'nfqlb').resources).toEqual({ limits: { memory: '256Mi' } });
    }
  });

  it('enforces the configured resources on update when enforceResources', () => {
    const d = render({ configuration: vertical(true), live: liveWith('42m') });
    expect(container(d, 'router').resources).toEqual({ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2' } });
  });

  it('keeps live resources when not enforced, and for unlisted containers always', () => {
    for (const enforce of [true, false]) {
      const d = render({ configuration: vertical(enforce), live: liveWith('42m') });
      expect(container(d, 'nfqlb').resources).toEqual({ requests: { cpu: '42m' } });
      expect(container(d, 'stateless-lb').resources).toEqual({ requests: { cpu: '42m' } });
      if (!enforce) expect(container(d, 'router').resources).toEqual({ requests: { cpu: '42m' } });
    }
  });

  // Decision (docs/operations.md, "Vertical scaling"): Meridio-2's desired-state
  // semantics. An entry says everything about its container; what it omits is
  // cleared, on create and whenever enforced.
  it('clears requests, limits and resizePolicy that an enforced entry omits (Meridio-2: EnforceTrue clears existing resources)', () => {
    const bare = gatewayConfiguration({ verticalScaling: { containers: [{ name: 'router', enforceResources: true }] } });
    const d = render({ configuration: bare, live: liveWith('42m') });
    expect(container(d, 'router').resources).toEqual({});
    expect(container(d, 'router').resizePolicy).toEqual([]);
    expect(container(d, 'stateless-lb').resources).toEqual({ requests: { cpu: '42m' } });
  });

  it('keeps live resources when the omitting entry is not enforced', () => {
    const bare = gatewayConfiguration({ verticalScaling: { containers: [{ name: 'router', enforceResources: false }] } });
    expect(container(render({ configuration: bare, live: liveWith('42m') }), 'router').resources).toEqual({ requests: { cpu: '42m' } });
  });

  it('treats a container new in the template as created', () => {
    const live = mutateLive(render(), (d) => {
      d.spec.template.spec.containers = d.spec.template.spec.containers.filter((c) => c.name !== 'router');
    });
    const d = render({ configuration: vertical(false), live });
    expect(container(d, 'router').resources).toEqual({ requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2' } });
  });
});

describe('renderDeployment: network attachments', () => {
  const nads = (...specs: Array<[string, string]>) =>
    gatewayConfiguration({ networkAttachments: specs.map(([name, iface]) => ({ nad: { name, namespace: NS, interface: iface } })) });
  const annotation = (d: Deployment) => d.spec.template.metadata?.annotations?.[NAD_ANNOTATION];

  it('merges template and configuration, written as JSON', () => {
    expect(annotation(render({ configuration: nads(['ext', 'ext0']) }))).toBe(
      `[{"name":"tmpl-net","namespace":"${NS}","interface":"tmpl0"},{"name":"ext","namespace":"${NS}","interface":"ext0"}]`,
    );
  });

  it('attaches a template NAD again on another interface, template entry first', () => {
    expect(annotation(render({ configuration: nads(['tmpl-net', 'moved0']) }))).toBe(
      `[{"name":"tmpl-net","namespace":"${NS}","interface":"tmpl0"},{"name":"tmpl-net","namespace":"${NS}","interface":"moved0"}]`,
    );
  });

  it('lets the configuration win for the same NAD and interface', () => {
    expect(annotation(render({ configuration: nads(['tmpl-net', 'tmpl0']) }))).toBe(
      `[{"name":"tmpl-net","namespace":"${NS}","interface":"tmpl0"}]`,
    );
  });

  it('keeps an equivalent live value verbatim, so the pod template does not change', () => {
    const first = render({ configuration: nads(['a', 'a0'], ['b', 'b0']) });
    const reordered = JSON.stringify([...(JSON.parse(annotation(first) ?? '[]') as unknown[])].reverse());
    const live = mutateLive(first, (d) => {
      d.spec.template.metadata!.annotations![NAD_ANNOTATION] = reordered;
    });
    expect(annotation(render({ configuration: nads(['b', 'b0'], ['a', 'a0']), live }))).toBe(reordered);
  });

  it('writes JSON when the template uses the short form', () => {
    const template = templateDeployment((raw) => {
      const meta = (raw.spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata;
      meta.annotations[NAD_ANNOTATION] = 'infra/short@s0';
    });
    expect(JSON.parse(annotation(render({ template, configuration: nads() })) ?? '')).toEqual([
      { name: 'short', namespace: 'infra', interface: 's0' },
    ]);
  });

  it('refuses a malformed template annotation', () => {
    const template = templateDeployment((raw) => {
      const meta = (raw.spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata;
      meta.annotations[NAD_ANNOTATION] = '[{';
    });
    expect(renderDeployment(input({ template })).ok).toBe(false);
  });
});

describe('renderDeployment: readiness gates', () => {
  const gates = (...cidrs: string[]) =>
    render({ configuration: gatewayConfiguration({ internalSubnets: cidrs.map((cidr) => ({ cidr })) }) }).spec.template.spec
      .readinessGates;

  it('adds one gate per IP family in internalSubnets', () => {
    expect(gates('10.0.0.0/24')).toEqual([{ conditionType: 'meridio-2.nordix.org/ipv4-connectivity' }]);
    expect(gates('fd00::/64')).toEqual([{ conditionType: 'meridio-2.nordix.org/ipv6-connectivity' }]);
    expect(gates('fd00::/64', '10.0.0.0/24')).toEqual([
      { conditionType: 'meridio-2.nordix.org/ipv4-connectivity' },
      { conditionType: 'meridio-2.nordix.org/ipv6-connectivity' },
    ]);
  });

  it('keeps other gates from the template and replaces ours', () => {
    const template = templateDeployment((raw) => {
      (raw.spec as { template: { spec: Record<string, unknown> } }).template.spec.readinessGates = [
        { conditionType: 'example.com/ready' },
        { conditionType: 'meridio-2.nordix.org/ipv6-connectivity' },
      ];
    });
    expect(render({ template }).spec.template.spec.readinessGates).toEqual([
      { conditionType: 'example.com/ready' },
      { conditionType: 'meridio-2.nordix.org/ipv4-connectivity' },
    ]);
  });
});

describe('renderDeployment: determinism', () => {
  it('renders the same object twice and does not mutate its inputs', () => {
    const i = input({ live: simulateServer(render(), null, '1') });
    const frozen = structuredClone(i);
    expect(renderDeployment(i)).toEqual(renderDeployment(i));
    expect(i).toEqual(frozen);
  });
});
