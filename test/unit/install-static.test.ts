import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { loadYaml } from '@kubernetes/client-node';
import { z } from 'zod';
import { API_SOURCE_REF_TYPES, EMITTED_TYPES, PATHS, RECEIVED_TYPES } from '../../events/types.js';
import { WATCHED_KINDS, WATCHED_RESOURCES, type WatchedKind } from '../../api/watched-resources.js';
import { LABEL_MANAGED_BY as MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../api/names.js';
import { loadConfig } from '../../functions/config.js';
import { APPLIED_CONFIGURATION_GENERATION, APPLIED_CONFIGURATION_NAME, APPLIED_CONFIGURATION_UID, APPLIED_GATEWAY_GENERATION, TEMPLATE_HASH } from '../../api/names.js';
import { CONDITION_ACCEPTED, CONDITION_APPLIED, CONDITION_LB_AVAILABLE, CONDITION_PROGRAMMED } from '../../api/names.js';
import { oracleCases } from '../oracle/oracle-cases.js';
import { cronPeriodSeconds } from '../../tools/monitoring/resync-schedule.mjs';
import { ServingWakeSchema } from '../../bench/report.js';
import { guessKindToResource, parseManifests, type ManifestObject } from '../support/install.js';

// Static checks of the install, read straight from the files that
// infra/kustomization.yaml lists (no cluster, no kustomize). They cover what
// the API server cannot: RBAC policy, Knative annotations (metadata is never
// schema-checked), and the Eventing specs whose CRD schemas keep unknown
// fields (a misspelled Trigger filter passes the API server, see
// test/integration/install.test.ts). Those specs are parsed here with strict
// schemas, so a misspelled field fails this test instead.

const INFRA = 'infra';

const KustomizationSchema = z.looseObject({
  namespace: z.string().min(1),
  resources: z.array(z.string().min(1)),
  components: z.array(z.string().min(1)),
  configMapGenerator: z.array(
    z.looseObject({
      name: z.string().min(1),
      files: z.array(z.string().min(1)),
    }),
  ),
});
const kustomization = KustomizationSchema.parse(loadYaml<unknown>(readFileSync(join(INFRA, 'kustomization.yaml'), 'utf8')));
const NAMESPACE = kustomization.namespace;

const ComponentSchema = z.looseObject({ kind: z.literal('Component'), resources: z.array(z.string().min(1)).default([]) });
/** The files a component directory adds, relative to infra/. */
function componentFiles(dir: string): string[] {
  return ComponentSchema.parse(loadYaml<unknown>(readFileSync(join(INFRA, dir, 'kustomization.yaml'), 'utf8'))).resources.map((f) => posix.join(dir, f));
}
// The default install: its resources and what its components add (the CRDs).
const installFiles = [...kustomization.resources, ...kustomization.components.flatMap(componentFiles)];

const manifests: ManifestObject[] = installFiles.flatMap((file) =>
  parseManifests(readFileSync(join(INFRA, file), 'utf8'), join(INFRA, file)).map((m) => m.object),
);

function ofKind(apiVersion: string, kind: string): ManifestObject[] {
  return manifests.filter((o) => o.apiVersion === apiVersion && o.kind === kind);
}

function one(apiVersion: string, kind: string): ManifestObject {
  const found = ofKind(apiVersion, kind);
  if (found.length !== 1) throw new Error(`expected exactly one ${kind} (${apiVersion}) in the install, found ${found.length}`);
  return found[0] as ManifestObject;
}

// --- Schemas: strict where the CRD is not, so that a typo fails here.

const PolicyRuleSchema = z.strictObject({
  apiGroups: z.array(z.string()).min(1),
  resources: z.array(z.string()).min(1),
  verbs: z.array(z.string()).min(1),
  // Narrows a rule to named objects (the one CRD the controller reads).
  resourceNames: z.array(z.string()).min(1).optional(),
});
const RoleSchema = z.looseObject({ rules: z.array(PolicyRuleSchema).min(1) });
type PolicyRule = z.infer<typeof PolicyRuleSchema>;

const BindingSchema = z.looseObject({
  roleRef: z.object({ apiGroup: z.literal('rbac.authorization.k8s.io'), kind: z.string(), name: z.string() }),
  subjects: z.array(z.looseObject({ kind: z.string(), name: z.string(), namespace: z.string().optional() })),
});

const KReferenceSchema = z.strictObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  name: z.string().min(1),
  namespace: z.string().optional(),
});
const DestinationSchema = z.strictObject({ ref: KReferenceSchema, uri: z.string().optional(), audience: z.string().optional() });

// ISO 8601 duration, as Knative parses backoffDelay.
const Iso8601Duration = z.string().regex(/^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/);

const DeliverySchema = z.strictObject({
  retry: z.number().int().min(1).max(20),
  backoffPolicy: z.literal('exponential'),
  backoffDelay: Iso8601Duration,
  deadLetterSink: DestinationSchema,
});

const TriggerSpecSchema = z.strictObject({
  broker: z.string().min(1),
  filter: z.strictObject({ attributes: z.strictObject({ type: z.string().min(1) }) }),
  subscriber: DestinationSchema,
  delivery: DeliverySchema,
});
const BrokerSpecSchema = z.strictObject({ delivery: DeliverySchema });

const LabelSelectorSchema = z.strictObject({
  matchLabels: z.record(z.string(), z.string()).optional(),
  matchExpressions: z
    .array(z.strictObject({ key: z.string(), operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']), values: z.array(z.string()).optional() }))
    .optional(),
});
const ApiServerSourceSpecSchema = z.strictObject({
  mode: z.enum(['Resource', 'Reference']),
  serviceAccountName: z.string().min(1),
  namespaceSelector: LabelSelectorSchema,
  resources: z.array(z.strictObject({ apiVersion: z.string().min(1), kind: z.string().min(1), selector: LabelSelectorSchema.optional() })).min(1),
  sink: DestinationSchema,
});
const PingSourceSpecSchema = z.strictObject({
  schedule: z.string().min(1),
  timezone: z.string().optional(),
  contentType: z.string().optional(),
  data: z.string().optional(),
  sink: DestinationSchema,
});
const SinkBindingSpecSchema = z.strictObject({
  subject: z.strictObject({ apiVersion: z.string(), kind: z.string(), name: z.string() }),
  sink: DestinationSchema,
});

const ProbeSchema = z.looseObject({
  httpGet: z.strictObject({ path: z.string() }),
  periodSeconds: z.number().int().optional(),
});
const ContainerSchema = z.looseObject({
  name: z.string(),
  image: z.string().min(1),
  env: z.array(z.strictObject({ name: z.string(), value: z.string() })),
  resources: z.strictObject({
    requests: z.strictObject({ cpu: z.string(), memory: z.string() }),
    limits: z.strictObject({ cpu: z.string(), memory: z.string() }),
  }),
  readinessProbe: ProbeSchema,
  livenessProbe: ProbeSchema,
  securityContext: z.looseObject({
    runAsNonRoot: z.literal(true),
    runAsUser: z.number().int().min(1),
    allowPrivilegeEscalation: z.literal(false),
    readOnlyRootFilesystem: z.literal(true),
    capabilities: z.strictObject({ drop: z.array(z.string()) }),
    seccompProfile: z.strictObject({ type: z.literal('RuntimeDefault') }),
  }),
  volumeMounts: z.array(z.looseObject({ name: z.string(), mountPath: z.string(), readOnly: z.literal(true) })),
});
const KnativeServiceSchema = z.looseObject({
  metadata: z.looseObject({
    labels: z.record(z.string(), z.string()),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.strictObject({
    template: z.strictObject({
      metadata: z.looseObject({ annotations: z.record(z.string(), z.string()) }),
      spec: z.looseObject({
        serviceAccountName: z.string().min(1),
        containerConcurrency: z.number().int(),
        timeoutSeconds: z.number().int(),
        containers: z.array(ContainerSchema).length(1),
        volumes: z.array(z.looseObject({ name: z.string(), configMap: z.looseObject({ name: z.string() }) })),
      }),
    }),
  }),
});

function specOf<T extends z.ZodType>(obj: ManifestObject, schema: T): z.output<T> {
  const r = schema.safeParse(obj.spec);
  if (!r.success) throw new Error(`${obj.kind} ${obj.metadata.name}: ${r.error.issues.map((i) => `spec.${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return r.data;
}

const ksvcObject = one('serving.knative.dev/v1', 'Service');
const ksvc = KnativeServiceSchema.parse(ksvcObject);
const KSVC_NAME = ksvcObject.metadata.name;
const brokerObject = one('eventing.knative.dev/v1', 'Broker');
const BROKER_NAME = brokerObject.metadata.name;

/** Knative Eventing's audience of a Knative Service: group/kind/namespace/name, lowercased. */
const FUNCTION_AUDIENCE = `serving.knative.dev/service/${NAMESPACE}/${KSVC_NAME}`.toLowerCase();

function pointsAtFunction(d: z.infer<typeof DestinationSchema>, path: string): void {
  expect(d.ref).toEqual({ apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: KSVC_NAME });
  expect(d.uri).toBe(path);
  // With Eventing OIDC on, a sender presents a token only for a named audience.
  expect(d.audience).toBe(FUNCTION_AUDIENCE);
}

function pointsAtBroker(d: z.infer<typeof DestinationSchema>): void {
  expect(d).toEqual({ ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: BROKER_NAME } });
}

function checkDelivery(delivery: z.infer<typeof DeliverySchema>): void {
  pointsAtFunction(delivery.deadLetterSink, PATHS.deadLetter);
}

// --- RBAC helpers.

interface Grant {
  group: string;
  resource: string;
  verb: string;
}

function grants(rules: PolicyRule[]): Grant[] {
  return rules.flatMap((r) => r.apiGroups.flatMap((group) => r.resources.flatMap((resource) => r.verbs.map((verb) => ({ group, resource, verb })))));
}

const key = (g: Grant): string => `${g.group}/${g.resource}:${g.verb}`;

/** The ClusterRoles bound to a ServiceAccount of the install's namespace. */
function rolesOf(serviceAccount: string): ManifestObject[] {
  const names = ofKind('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding')
    .map((b) => BindingSchema.parse(b))
    .filter((b) => b.subjects.some((s) => s.kind === 'ServiceAccount' && s.name === serviceAccount && s.namespace === NAMESPACE))
    .map((b) => {
      expect(b.roleRef.kind).toBe('ClusterRole');
      return b.roleRef.name;
    });
  return ofKind('rbac.authorization.k8s.io/v1', 'ClusterRole').filter((r) => names.includes(r.metadata.name));
}

/** The resource names the API server serves for the watched kinds (checked against discovery by test/integration/install.test.ts). */
const servedName = (kind: string): string | undefined => (Object.hasOwn(WATCHED_RESOURCES, kind) ? WATCHED_RESOURCES[kind as WatchedKind].plural : undefined);

function groupOf(apiVersion: string): string {
  return apiVersion.includes('/') ? (apiVersion.split('/')[0] as string) : '';
}

/** For people running `kubectl meridio`, bound by hand (docs/install.md): no part of the install. */
const PLUGIN_READER_ROLE = 'rbac/plugin-reader-clusterrole.yaml';

describe('infra/kustomization.yaml', () => {
  test('lists every manifest under infra/, itself or through a component (except samples/, templates/ and the optional components)', () => {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(join(INFRA, dir))) {
        const rel = dir ? posix.join(dir, name) : name;
        if (statSync(join(INFRA, rel)).isDirectory()) {
          // samples/: demo objects; templates/: the LB template (a generator
          // input); beside-meridio-2, monitoring: optional components.
          if (!['samples', 'templates', 'beside-meridio-2', 'monitoring'].includes(rel)) walk(rel);
        } else if (name.endsWith('.yaml') && name !== 'kustomization.yaml' && rel !== 'knative/kustomizeconfig.yaml' && rel !== PLUGIN_READER_ROLE) {
          files.push(rel);
        }
      }
    };
    walk('');
    expect([...installFiles].sort()).toEqual(files.sort());
  });

  test('installs the Meridio-2 CRDs through the crds component, so that an install beside Meridio-2 can leave them out', () => {
    expect(kustomization.components).toContain('crds');
    expect(componentFiles('crds').map((f) => parseManifests(readFileSync(join(INFRA, f), 'utf8'), f).map((m) => `${m.object.kind} ${m.object.metadata.name}`)).flat().sort()).toEqual([
      'CustomResourceDefinition gatewayconfigurations.meridio-2.nordix.org',
      'CustomResourceDefinition l34routes.meridio-2.nordix.org',
    ]);
  });

  test('generates the LB template ConfigMap from the template the controller is tested with', () => {
    expect(kustomization.configMapGenerator).toEqual([
      expect.objectContaining({ name: 'meridio-2-lb-template', files: ['lb-deployment.yaml=templates/lb-deployment.yaml'] }),
    ]);
  });

  test('installs into one namespace, which it also creates, and binds the ServiceAccounts there', () => {
    expect(one('v1', 'Namespace').metadata.name).toBe(NAMESPACE);
    for (const b of ofKind('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding').map((x) => BindingSchema.parse(x))) {
      for (const s of b.subjects) expect(s).toEqual({ kind: 'ServiceAccount', name: s.name, namespace: NAMESPACE });
    }
  });
});

describe('RBAC', () => {
  const roles = [...ofKind('rbac.authorization.k8s.io/v1', 'ClusterRole'), ...ofKind('rbac.authorization.k8s.io/v1', 'Role')];

  test('there are roles to check', () => {
    expect(roles.map((r) => r.metadata.name).sort()).toEqual(['meridio-2-apiserversource', 'meridio-2-gateway-controller']);
  });

  test.each(roles.map((r) => [r.metadata.name, r] as const))('%s: no wildcards, no delete, no secrets, no privilege escalation', (_name, role) => {
    const { rules } = RoleSchema.parse(role);
    for (const g of grants(rules)) {
      expect(g.group).not.toBe('*');
      expect(g.resource).not.toBe('*');
      expect(g.resource).not.toMatch(/^\*\/|\/\*$/);
      expect(g.verb).not.toBe('*');
      expect(['delete', 'deletecollection']).not.toContain(g.verb);
      expect(['escalate', 'bind', 'impersonate']).not.toContain(g.verb);
      expect(g.resource.split('/')[0]).not.toBe('secrets');
    }
  });

  test('the function runs as the ServiceAccount bound to the controller ClusterRole', () => {
    const sa = ksvc.spec.template.spec.serviceAccountName;
    expect(ofKind('v1', 'ServiceAccount').map((s) => s.metadata.name)).toContain(sa);
    expect(rolesOf(sa).map((r) => r.metadata.name)).toEqual(['meridio-2-gateway-controller']);
  });

  // Beside Meridio-2's controller manager (docs/install.md, "Running beside
  // Meridio-2's other controllers"), its DistributionGroup and
  // EndpointNetworkConfiguration controllers own DistributionGroup status,
  // EndpointNetworkConfigurations and LoadBalancerEndpointSlices; they read
  // Pods, Gateways and the Gateway's Accepted condition. The function writes
  // only its LB Deployments (and their PodDisruptionBudgets when that is on),
  // Gateway and GatewayClass status, and Events.
  test('the function can write nothing that Meridio-2\'s other controllers own', () => {
    const writes = rolesOf(ksvc.spec.template.spec.serviceAccountName)
      .flatMap((r) => grants(RoleSchema.parse(r).rules))
      .filter((g) => !['get', 'list', 'watch'].includes(g.verb))
      .map(key);
    expect(writes.sort()).toEqual([
      'apps/deployments:create',
      'apps/deployments:patch',
      'apps/deployments:update',
      'events.k8s.io/events:create',
      'events.k8s.io/events:update',
      'gateway.networking.k8s.io/gatewayclasses/status:update',
      'gateway.networking.k8s.io/gateways/status:update',
      'policy/poddisruptionbudgets:create',
      'policy/poddisruptionbudgets:update',
    ]);
    for (const owned of ['distributiongroups', 'distributiongroups/status', 'endpointnetworkconfigurations', 'loadbalancerendpointslices']) {
      expect(writes.filter((w) => w.startsWith(`meridio-2.nordix.org/${owned}:`))).toEqual([]);
    }
  });
});

describe('Knative Service', () => {
  const template = ksvc.spec.template;
  const container = template.spec.containers[0] as z.infer<typeof ContainerSchema>;
  const KNOWN_AUTOSCALING = new Set(
    ['class', 'min-scale', 'max-scale', 'initial-scale', 'scale-down-delay', 'metric', 'target', 'scale-to-zero-pod-retention-period', 'metric-aggregation-algorithm', 'window', 'target-utilization-percentage', 'target-burst-capacity', 'panic-window-percentage', 'panic-threshold-percentage', 'activation-scale'].map((k) => `autoscaling.knative.dev/${k}`),
  );

  test('scales to zero: min-scale is "0", on the revision template', () => {
    expect(template.metadata.annotations['autoscaling.knative.dev/min-scale']).toBe('0');
  });

  test('has a bounded max-scale, and every autoscaling annotation is a real one, on the revision template (not the Service)', () => {
    const max = template.metadata.annotations['autoscaling.knative.dev/max-scale'];
    expect(max).toMatch(/^[1-9][0-9]*$/);
    for (const k of Object.keys(template.metadata.annotations).filter((x) => x.startsWith('autoscaling.knative.dev/'))) {
      expect(KNOWN_AUTOSCALING).toContain(k);
    }
    expect(Object.keys(ksvc.metadata.annotations ?? {}).filter((x) => x.startsWith('autoscaling.knative.dev/'))).toEqual([]);
  });

  test('sets containerConcurrency and timeoutSeconds within Knative limits', () => {
    expect(template.spec.containerConcurrency).toBeGreaterThanOrEqual(1);
    expect(template.spec.containerConcurrency).toBeLessThanOrEqual(1000);
    expect(template.spec.timeoutSeconds).toBeGreaterThanOrEqual(1);
    expect(template.spec.timeoutSeconds).toBeLessThanOrEqual(600);
  });

  test('is reachable only inside the cluster', () => {
    expect(ksvc.metadata.labels['networking.knative.dev/visibility']).toBe('cluster-local');
  });

  test('probes the function\'s health paths on its own port', () => {
    expect(container.readinessProbe.httpGet).toEqual({ path: PATHS.ready });
    expect(container.livenessProbe.httpGet).toEqual({ path: PATHS.live });
  });

  test('runs non-root, read-only, with every capability dropped, and with requests and limits', () => {
    expect(container.securityContext.capabilities.drop).toEqual(['ALL']);
    expect(container.resources.requests.cpu).toBeTruthy();
    expect(container.resources.limits.memory).toBeTruthy();
  });

  test('its environment is a valid function configuration, with the LB template where the ConfigMap is mounted', () => {
    const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
    expect(Object.keys(env).sort()).toEqual(['CONTROLLER_NAME', 'LB_PDB_MAX_UNAVAILABLE', 'LB_ROLLOUT_BUDGET', 'LB_SERVICE_ACCOUNT', 'LOG_LEVEL', 'SENDER_AUTH', 'SENDER_AUTH_ALLOWED', 'SENDER_AUTH_AUDIENCE', 'TEMPLATE_PATH', 'WATCH_NAMESPACES']);
    // K_SINK comes from the SinkBinding, PORT from Knative.
    const config = loadConfig({ ...env, K_SINK: 'http://broker-ingress.knative-eventing.svc.cluster.local/ns/broker' });
    expect(config.TEMPLATE_PATH).toBe(env.TEMPLATE_PATH);
    // PodDisruptionBudgets are opt-in: shipped off.
    expect(config.LB_PDB_MAX_UNAVAILABLE).toBeUndefined();
    // The function must answer (503) before Knative cuts the request off, and
    // a single API request must fit in the budget more than once.
    expect(config.INVOCATION_BUDGET_MS).toBeLessThan((template.spec.timeoutSeconds ?? 0) * 1000);
    expect(config.API_REQUEST_TIMEOUT_MS * 2).toBeLessThanOrEqual(config.INVOCATION_BUDGET_MS);

    const generator = kustomization.configMapGenerator[0];
    const fileKey = generator?.files[0]?.split('=')[0];
    const volume = template.spec.volumes.find((v) => v.configMap.name === generator?.name);
    expect(volume).toBeDefined();
    const mount = container.volumeMounts.find((m) => m.name === volume?.name);
    expect(mount).toBeDefined();
    expect(env.TEMPLATE_PATH).toBe(`${mount?.mountPath}/${fileKey}`);
  });

  test('sender authentication ships off, ready to turn on: the Triggers\' audience, and exactly their OIDC ServiceAccounts allowed', () => {
    const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
    expect(env.SENDER_AUTH).toBe('off');
    const config = loadConfig({ ...env, SENDER_AUTH: 'required' });
    expect(config.SENDER_AUTH_AUDIENCE).toBe(FUNCTION_AUDIENCE);
    // Eventing names a Trigger's OIDC identity with kmeta.ChildName: the plain
    // concatenation while it fits in 63 characters (longer names get a hash).
    const triggerIdentities = ofKind('eventing.knative.dev/v1', 'Trigger').map((t) => `${t.metadata.name}-oidc-eventing.knative.dev-trigger`);
    for (const name of triggerIdentities) expect(name.length).toBeLessThanOrEqual(63);
    expect([...config.SENDER_AUTH_ALLOWED].sort()).toEqual(triggerIdentities.map((n) => `${NAMESPACE}/${n}`).sort());
  });
});

describe('EventPolicy', () => {
  const RefSchema = z.strictObject({ apiVersion: z.string(), kind: z.string(), name: z.string() });
  const EventPolicySpecSchema = z.strictObject({
    to: z.array(z.strictObject({ ref: RefSchema })).length(1),
    from: z.array(z.strictObject({ ref: RefSchema })).min(1),
  });
  const spec = specOf(one('eventing.knative.dev/v1alpha1', 'EventPolicy'), EventPolicySpecSchema);

  test('the Broker admits only the ApiServerSource, the PingSource and the function\'s fan-out (its SinkBinding\'s identity)', () => {
    expect(spec.to[0]?.ref).toEqual({ apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: BROKER_NAME });
    const senders = (apiVersion: string, kind: string) => ofKind(apiVersion, kind).map((o) => ({ apiVersion, kind, name: o.metadata.name }));
    expect(spec.from.map((f) => f.ref)).toEqual([
      ...senders('sources.knative.dev/v1', 'ApiServerSource'),
      ...senders('sources.knative.dev/v1', 'PingSource'),
      ...senders('sources.knative.dev/v1', 'SinkBinding'),
    ]);
    expect(spec.from).toHaveLength(3);
  });
});

describe('Broker and Triggers', () => {
  const triggers = ofKind('eventing.knative.dev/v1', 'Trigger').map((t) => ({ name: t.metadata.name, spec: specOf(t, TriggerSpecSchema) }));
  const routed = triggers.map((t) => t.spec.filter.attributes.type);
  const refTypes: string[] = Object.values(API_SOURCE_REF_TYPES);

  test('the Broker\'s own delivery is bounded, exponential and dead-letters to the function', () => {
    checkDelivery(specOf(brokerObject, BrokerSpecSchema).delivery);
  });

  test('every Trigger filters on exactly one type that the code receives or emits, and no type has two Triggers', () => {
    expect(triggers.length).toBeGreaterThan(0);
    for (const type of routed) expect([...RECEIVED_TYPES, ...EMITTED_TYPES]).toContain(type);
    expect(new Set(routed).size).toBe(routed.length);
  });

  test('every type the function receives has a Trigger, except the ApiServerSource Reference-mode types (the source runs in Resource mode)', () => {
    const expected = RECEIVED_TYPES.filter((t) => !refTypes.includes(t));
    expect([...routed].sort()).toEqual([...expected].sort());
    for (const t of refTypes) expect(routed).not.toContain(t);
    expect(specOf(one('sources.knative.dev/v1', 'ApiServerSource'), ApiServerSourceSpecSchema).mode).toBe('Resource');
  });

  test('every type the function emits (its fan-out) has a Trigger back to the function', () => {
    for (const t of EMITTED_TYPES) expect(routed).toContain(t);
  });

  test.each(triggers.map((t) => [t.name, t.spec] as const))('%s: Broker, subscriber path, bounded exponential retries, dead-letter sink', (_name, spec) => {
    expect(spec.broker).toBe(BROKER_NAME);
    pointsAtFunction(spec.subscriber, PATHS.events);
    checkDelivery(spec.delivery);
  });
});

describe('ApiServerSource', () => {
  const source = one('sources.knative.dev/v1', 'ApiServerSource');
  const spec = specOf(source, ApiServerSourceSpecSchema);

  test('watches exactly the kinds the function handles, in Resource mode, into the Broker', () => {
    expect(spec.mode).toBe('Resource');
    expect(spec.resources.map((r) => r.kind).sort()).toEqual([...WATCHED_KINDS].sort());
    pointsAtBroker(spec.sink);
  });

  test('selects Deployments by the managed-by label the renderer sets, and nothing else by label', () => {
    for (const r of spec.resources) {
      if (r.kind === 'Deployment') {
        expect(r.apiVersion).toBe('apps/v1');
        expect(r.selector).toEqual({ matchLabels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } });
      } else {
        expect(r.selector).toBeUndefined();
      }
    }
  });

  test('has a namespaceSelector (without one it would watch only its own namespace)', () => {
    expect(spec.namespaceSelector).toBeDefined();
  });

  test('its ServiceAccount may get, list and watch exactly the watched resources, under their real names and under the names Knative guesses, nothing more', () => {
    expect(ofKind('v1', 'ServiceAccount').map((s) => s.metadata.name)).toContain(spec.serviceAccountName);
    const granted = rolesOf(spec.serviceAccountName).flatMap((r) => grants(RoleSchema.parse(r).rules)).map(key);
    const expected = spec.resources.flatMap((r) => {
      const served = servedName(r.kind);
      if (served === undefined) throw new Error(`the ApiServerSource watches ${r.kind}, which the function does not handle`);
      // The adapter watches the served name; Knative's permission check asks for the guessed one.
      return [served, guessKindToResource(r.kind)].flatMap((resource) =>
        ['get', 'list', 'watch'].map((verb) => key({ group: groupOf(r.apiVersion), resource, verb })),
      );
    });
    expect([...new Set(granted)].sort()).toEqual([...new Set(expected)].sort());
    expect(granted).toHaveLength(new Set(granted).size);
  });
});

describe('PingSource and SinkBinding', () => {
  test('the resync is a valid five-field schedule with JSON data, into the Broker', () => {
    const ping = specOf(one('sources.knative.dev/v1', 'PingSource'), PingSourceSpecSchema);
    const fields = ping.schedule.trim().split(/\s+/);
    expect(fields).toHaveLength(5);
    for (const f of fields) expect(f).toMatch(/^(\*|\d+(-\d+)?)(\/\d+)?(,(\*|\d+(-\d+)?)(\/\d+)?)*$/);
    expect(ping.contentType).toBe('application/json');
    expect(() => JSON.parse(ping.data ?? '') as unknown).not.toThrow();
    pointsAtBroker(ping.sink);
  });

  test('the resync repairs a lost event within 10 minutes, and its ping leaves the function idle most of the time', () => {
    const period = cronPeriodSeconds(specOf(one('sources.knative.dev/v1', 'PingSource'), PingSourceSpecSchema).schedule);
    expect(period).toBeLessThanOrEqual(600);
    // The life of a Pod one ping wakes, as the Serving e2e last measured it (bench/results/serving-wake.json).
    const { ping } = ServingWakeSchema.parse(JSON.parse(readFileSync('bench/results/serving-wake.json', 'utf8')));
    expect(ping.podLifetime / 1000 / period).toBeLessThanOrEqual(0.1);
  });

  test('the SinkBinding gives the function K_SINK = the Broker', () => {
    const binding = specOf(one('sources.knative.dev/v1', 'SinkBinding'), SinkBindingSpecSchema);
    expect(binding.subject).toEqual({ apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: KSVC_NAME });
    pointsAtBroker(binding.sink);
  });
});

describe('gateway-watch component (Gateway events despite Knative\'s plural guess), in the default install', () => {
  test('the default install enables it and sets its image the way it sets the controller\'s', () => {
    expect(kustomization.components).toEqual(['crds', 'knative/gateway-watch']);
    const images = z.array(z.strictObject({ name: z.string(), newName: z.string().optional(), newTag: z.string().optional(), digest: z.string().optional() })).parse(kustomization.images);
    const adapter = images.find((i) => i.name === 'knative-apiserver-receive-adapter');
    // Named like the controller's image (no registry: the operator points both
    // at what they run); tagged with the Eventing release the install is validated against.
    expect(adapter?.newName).toBeUndefined();
    expect(adapter?.newTag).toBe('v1.23.0');
    expect(images.find((i) => i.name === 'meridio-2-gateway-controller')?.newName).toBeUndefined();
    expect(images.map((i) => i.name).sort()).toEqual(['knative-apiserver-receive-adapter', 'meridio-2-gateway-controller']);
  });

  const dir = join(INFRA, 'knative', 'gateway-watch');
  const component = z
    .looseObject({ kind: z.literal('Component'), resources: z.array(z.string()) })
    .parse(loadYaml<unknown>(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')));
  const objects = component.resources.flatMap((f) => parseManifests(readFileSync(join(dir, f), 'utf8'), join(dir, f)).map((m) => m.object));
  const source = specOf(one('sources.knative.dev/v1', 'ApiServerSource'), ApiServerSourceSpecSchema);

  const SourceConfigSchema = z.strictObject({
    allNamespaces: z.boolean(),
    namespaces: z.array(z.string()),
    mode: z.literal('Resource'),
    resources: z.array(z.strictObject({ gvr: z.strictObject({ Group: z.string(), Version: z.string(), Resource: z.string() }) })),
  });
  const ContainerSourceSpecSchema = z.strictObject({
    sink: DestinationSchema,
    template: z.looseObject({
      spec: z.looseObject({
        serviceAccountName: z.string(),
        containers: z.array(z.looseObject({ env: z.array(z.looseObject({ name: z.string(), value: z.string().optional() })) })).length(1),
      }),
    }),
  });

  test('adds one ContainerSource in the install namespace, into the Broker, as the ApiServerSource\'s ServiceAccount', () => {
    expect(objects.map((o) => `${o.apiVersion} ${o.kind}`)).toEqual(['sources.knative.dev/v1 ContainerSource']);
    const [cs] = objects;
    if (!cs) throw new Error('the gateway-watch component has no ContainerSource');
    expect(cs.metadata.namespace).toBe(NAMESPACE);
    const spec = specOf(cs, ContainerSourceSpecSchema);
    pointsAtBroker(spec.sink);
    expect(spec.template.spec.serviceAccountName).toBe(source.serviceAccountName);
  });

  test('its adapter watches Gateways under their served name, in the namespaces the ApiServerSource selects', () => {
    const [cs] = objects;
    if (!cs) throw new Error('the gateway-watch component has no ContainerSource');
    const env = specOf(cs, ContainerSourceSpecSchema).template.spec.containers[0]?.env ?? [];
    const raw = env.find((e) => e.name === 'K_SOURCE_CONFIG')?.value ?? '';
    const config = SourceConfigSchema.parse(JSON.parse(raw) as unknown);
    const gateway = source.resources.find((r) => r.kind === 'Gateway');
    const [group, version] = (gateway?.apiVersion ?? '').split('/');
    expect(config.resources).toEqual([{ gvr: { Group: group, Version: version, Resource: WATCHED_RESOURCES.Gateway.plural } }]);
    // The ApiServerSource's empty namespaceSelector means all namespaces.
    expect(source.namespaceSelector).toEqual({});
    expect(config.allNamespaces).toBe(true);
    expect(env.map((e) => e.name)).toEqual(expect.arrayContaining(['K_SOURCE_CONFIG', 'NAME', 'NAMESPACE']));
  });
});

describe('docs/operations.md keeps up with the code', () => {
  const doc = readFileSync(join('docs', 'operations.md'), 'utf8');
  // Where the Gateway planner decides conditions and Events (listener status aside: its reasons are the Gateway API's).
  const planSource = ['plan.ts', 'status-decisions.ts', 'planned-events.ts']
    .map((f) => readFileSync(join('functions', 'reconcile', 'plan', f), 'utf8'))
    .join('\n');
  const conditionReasons = [...planSource.matchAll(/'(?:True|False|Unknown)',\s*'([A-Z][A-Za-z]+)'/g)].map((m) => m[1] as string);
  const eventReasons = [...planSource.matchAll(/type: '(?:Normal|Warning)',\s*reason: '([A-Z][A-Za-z]+)'/g)].map((m) => m[1] as string);

  test('names every condition type, and every reason the planner sets', () => {
    for (const type of [CONDITION_ACCEPTED, CONDITION_PROGRAMMED, CONDITION_APPLIED, CONDITION_LB_AVAILABLE]) expect(doc).toContain(`### ${type}`);
    expect(new Set(conditionReasons)).toEqual(new Set(['Accepted', 'InvalidParameters', 'Pending', 'Programmed', 'Invalid', 'Applied', 'ApplyFailed', 'RetriesExhausted', 'Available', 'NoAvailableReplicas']));
    for (const reason of conditionReasons) expect(doc).toContain(`\`${reason}\``);
  });

  test('names every Event reason the planner emits', () => {
    expect(new Set(eventReasons)).toEqual(new Set(['InvalidParameters', 'NameCollision', 'GatewayConfigurationApplied', 'ApplyFailed', 'RetriesExhausted', 'MutatedByAdmission']));
    for (const reason of eventReasons) expect(doc).toMatch(new RegExp(`\\| (Normal|Warning) \\| \`${reason}\``));
  });

  test('names every Deployment annotation', () => {
    for (const key of [APPLIED_CONFIGURATION_NAME, APPLIED_CONFIGURATION_UID, APPLIED_CONFIGURATION_GENERATION, APPLIED_GATEWAY_GENERATION, TEMPLATE_HASH]) {
      expect(doc).toContain(`\`${key}\``);
    }
  });
});

describe('optional beside-meridio-2 component (next to Meridio-2\'s own controllers)', () => {
  const PatchSchema = z.array(z.strictObject({ op: z.enum(['test', 'replace']), path: z.string(), value: z.string() }));
  const component = z
    .looseObject({
      kind: z.literal('Component'),
      resources: z.undefined().optional(),
      patches: z.array(z.strictObject({ target: z.looseObject({ group: z.string(), kind: z.string(), name: z.string() }), patch: z.string() })),
    })
    .parse(loadYaml<unknown>(readFileSync(join(INFRA, 'beside-meridio-2', 'kustomization.yaml'), 'utf8')));

  test('deletes exactly the CRDs of the crds component, and adds nothing', () => {
    const [remove] = component.patches;
    expect(remove?.patch).toMatch(/^\$patch: delete\n/);
    const selects = new RegExp(`^${remove?.target.name ?? ''}$`);
    const crds = manifests.filter((m) => m.kind === 'CustomResourceDefinition').map((m) => m.metadata.name);
    expect(crds.length).toBe(2);
    for (const name of crds) expect(selects.test(name)).toBe(true);
    // The Gateway API CRDs (a prerequisite, not ours) would not match anyway.
    expect(selects.test('gateways.gateway.networking.k8s.io')).toBe(false);
  });

  test('sets LB_SERVICE_ACCOUNT, guarded by a test op, to the ServiceAccount of Meridio-2\'s install (as recorded)', () => {
    const [, setAccount] = component.patches;
    expect(setAccount?.target).toEqual({ group: 'serving.knative.dev', kind: 'Service', name: KSVC_NAME });
    const ops = PatchSchema.parse(loadYaml<unknown>(setAccount?.patch ?? ''));
    const service = one('serving.knative.dev/v1', 'Service') as unknown as { spec: { template: { spec: { containers: Array<{ env: Array<{ name: string }> }> } } } };
    const test = ops.find((o) => o.op === 'test');
    const replace = ops.find((o) => o.op === 'replace');
    const index = Number(/\/env\/(\d+)\/name$/.exec(test?.path ?? '')?.[1]);
    expect(service.spec.template.spec.containers[0]?.env[index]?.name).toBe(test?.value);
    expect(test?.value).toBe('LB_SERVICE_ACCOUNT');
    expect(replace?.path).toBe(test?.path.replace(/name$/, 'value'));
    expect(replace?.value).toBe(oracleCases()[0]?.inputs.controller.lbServiceAccount);
  });
});
