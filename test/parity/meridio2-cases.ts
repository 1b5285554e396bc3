// The parity table: one row per rendering or status rule of Meridio-2's
// Gateway controller (Nordix/Meridio-2, internal/controller/gateway). Each row
// names the rule it mirrors (file and function, in words), the inputs, and
// the Deployment fields and conditions expected. Rows marked `deviation` are
// where this controller intentionally differs; docs/operations.md lists them.
//
// The same rows run twice: through the pure planner (test/unit/parity.test.ts)
// and on the real API server as the controller's ServiceAccount
// (test/integration/parity.test.ts).
import { loadYaml } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { parseTemplate, type Template } from '../../functions/reconcile/template.js';

export const SHIPPED_TEMPLATE = 'infra/templates/lb-deployment.yaml';

type Json = Record<string, unknown>;

export interface ParityCase {
  /** What the row shows. */
  name: string;
  /** The Meridio-2 rule: file and function, in words. */
  mirrors: string;
  /** Set when we differ from Meridio-2 on purpose, and why. */
  deviation?: string;
  /** A change to the shipped LB template for this row. */
  template?: (raw: Json) => void;
  /** The GatewayConfiguration spec (merged over a minimal valid one). */
  configuration?: Json;
  /** Gateway infrastructure without parametersRef (a missing reference). */
  noParametersRef?: boolean;
  /** Expected Deployment fields: path → value, or `absent`. Paths select list items by name: containers[router].env[POD_NAME]. */
  fields?: Array<[string, unknown]>;
  /** Expected conditions: type → status and reason. */
  conditions: Record<string, { status: string; reason: string; message?: RegExp }>;
}

export const ABSENT = Symbol('absent');

export const BASE_CONFIGURATION: Json = {
  networkAttachments: [{ type: 'NAD', nad: { name: 'app-net', namespace: '', interface: 'net1' } }],
  internalSubnets: [{ attachmentType: 'NAD', cidr: '172.16.0.0/24' }],
  horizontalScaling: { replicas: 2, enforceReplicas: true },
};

const container = (raw: Json, name: string): Json => {
  const spec = ((raw.spec as Json).template as Json).spec as { containers: Json[] };
  const found = spec.containers.find((c) => c.name === name);
  if (!found) throw new Error(`the shipped template has no container ${name}`);
  return found;
};

const ACCEPTED_PROGRAMMED = {
  Accepted: { status: 'True', reason: 'Accepted' },
  Programmed: { status: 'True', reason: 'Programmed' },
};

export const CASES: ParityCase[] = [
  {
    name: 'MERIDIO_GATEWAY_NAME is set in the containers that declare it',
    mirrors: 'deployment.go, injectGatewayEnvVars',
    fields: [
      ['spec.template.spec.containers[loadbalancer].env[MERIDIO_GATEWAY_NAME].value', '<gateway>'],
      ['spec.template.spec.containers[router].env[MERIDIO_GATEWAY_NAME].value', '<gateway>'],
    ],
    conditions: ACCEPTED_PROGRAMMED,
  },
  {
    name: 'a container that does not declare MERIDIO_GATEWAY_NAME is not given it',
    mirrors: 'deployment.go, injectGatewayEnvVars (only existing entries are set)',
    template: (raw) => {
      const router = container(raw, 'router');
      router.env = (router.env as Json[]).filter((e) => e.name !== 'MERIDIO_GATEWAY_NAME');
    },
    fields: [['spec.template.spec.containers[router].env[MERIDIO_GATEWAY_NAME]', ABSENT]],
    conditions: ACCEPTED_PROGRAMMED,
  },
  {
    name: 'the router gets POD_NAME, POD_NAMESPACE and POD_UID when missing',
    mirrors: 'deployment.go, injectRouterPodIdentityEnvVars',
    template: (raw) => {
      const router = container(raw, 'router');
      router.env = (router.env as Json[]).filter((e) => !String(e.name).startsWith('POD_'));
    },
    fields: [
      ['spec.template.spec.containers[router].env[POD_NAME].valueFrom.fieldRef.fieldPath', 'metadata.name'],
      ['spec.template.spec.containers[router].env[POD_NAMESPACE].valueFrom.fieldRef.fieldPath', 'metadata.namespace'],
      ['spec.template.spec.containers[router].env[POD_UID].valueFrom.fieldRef.fieldPath', 'metadata.uid'],
      ['spec.template.spec.containers[loadbalancer].env[POD_NAME]', ABSENT],
    ],
    conditions: ACCEPTED_PROGRAMMED,
  },
  {
    name: 'a custom POD_NAME of the router is kept',
    mirrors: 'deployment.go, injectRouterPodIdentityEnvVars (never overwrites)',
    template: (raw) => {
      const router = container(raw, 'router');
      router.env = (router.env as Json[]).map((e) => (e.name === 'POD_NAME' ? { name: 'POD_NAME', value: 'fixed' } : e));
    },
    fields: [['spec.template.spec.containers[router].env[POD_NAME].value', 'fixed']],
    conditions: ACCEPTED_PROGRAMMED,
  },
  {
    name: 'one NAD on two interfaces is two attachments (template sysctl-tuning@dummy, configuration sysctl-tuning@dummy2)',
    mirrors: 'deployment.go, applyNetworkAttachments (identity: namespace, name and interface)',
    template: (raw) => {
      const meta = ((raw.spec as Json).template as Json).metadata as Json;
      meta.annotations = { 'k8s.v1.cni.cncf.io/networks': '[{"name":"sysctl-tuning","interface":"dummy"}]' };
    },
    configuration: { networkAttachments: [{ type: 'NAD', nad: { name: 'sysctl-tuning', namespace: '', interface: 'dummy2' } }] },
    fields: [['networks', ['sysctl-tuning@dummy', 'sysctl-tuning@dummy2']]],
    conditions: ACCEPTED_PROGRAMMED,
  },
  {
    name: 'the same NAD and interface twice is a duplicate interface',
    mirrors: 'validation.go, validateNetworkAttachments ("duplicate interface name")',
    configuration: {
      networkAttachments: [
        { type: 'NAD', nad: { name: 'sysctl-tuning', namespace: '', interface: 'dummy' } },
        { type: 'NAD', nad: { name: 'sysctl-tuning', namespace: '', interface: 'dummy' } },
      ],
    },
    conditions: {
      Accepted: { status: 'False', reason: 'InvalidParameters', message: /duplicate interface name "dummy"/ },
      Programmed: { status: 'False', reason: 'Invalid' },
    },
    deviation: 'Programmed=False/Invalid for a new Gateway with invalid parameters; Meridio-2 leaves Programmed as it was (Pending)',
  },
  {
    name: 'no networks at all: no network annotation',
    mirrors: 'deployment.go, applyNetworkAttachments (deletes the annotation when the list is empty)',
    configuration: { networkAttachments: [] },
    fields: [['spec.template.metadata.annotations.k8s\\.v1\\.cni\\.cncf\\.io/networks', ABSENT]],
    conditions: ACCEPTED_PROGRAMMED,
  },
  {
    name: 'readiness gates per IP family of the internal subnets',
    mirrors: 'deployment.go, applyReadinessGates and ipFamiliesFromInternalSubnets',
    configuration: { internalSubnets: [{ attachmentType: 'NAD', cidr: '172.16.0.0/24' }, { attachmentType: 'NAD', cidr: 'fd00:100::/64' }] },
    fields: [['spec.template.spec.readinessGates', [{ conditionType: 'meridio-2.nordix.org/ipv4-connectivity' }, { conditionType: 'meridio-2.nordix.org/ipv6-connectivity' }]]],
    conditions: ACCEPTED_PROGRAMMED,
  },
  {
    name: 'the template\'s own readiness gates are kept',
    mirrors: 'deployment.go, applyReadinessGates (replaces the whole list)',
    deviation: 'Meridio-2 drops the template\'s gates; that loses a gate someone added on purpose, so we keep them',
    template: (raw) => {
      (((raw.spec as Json).template as Json).spec as Json).readinessGates = [{ conditionType: 'example.com/extra' }];
    },
    fields: [['spec.template.spec.readinessGates', [{ conditionType: 'example.com/extra' }, { conditionType: 'meridio-2.nordix.org/ipv4-connectivity' }]]],
    conditions: ACCEPTED_PROGRAMMED,
  },
  {
    name: 'an enforced verticalScaling entry without resources clears requests, limits and resizePolicy',
    mirrors: 'deployment.go, applyVerticalScaling (docs: "omitting fields means no value desired")',
    configuration: { verticalScaling: { containers: [{ name: 'router', enforceResources: true }] } },
    fields: [
      ['spec.template.spec.containers[router].resources', {}],
      ['spec.template.spec.containers[router].resizePolicy', ABSENT],
      ['spec.template.spec.containers[loadbalancer].resources.limits.cpu', '500m'],
    ],
    conditions: ACCEPTED_PROGRAMMED,
  },
  {
    name: 'controller labels, selector and anti-affinity name the LB Deployment',
    mirrors: 'deployment.go, setControllerLabels and updateAntiAffinityLabels',
    fields: [
      ['metadata.labels.app', 'sllbr-<gateway>'],
      ['metadata.labels.gateway\\.networking\\.k8s\\.io/gateway-name', '<gateway>'],
      ['metadata.labels.app\\.kubernetes\\.io/managed-by', 'gateway-controller.meridio-2.nordix.org'],
      ['spec.selector', { matchLabels: { app: 'sllbr-<gateway>' } }],
      ['spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values', ['sllbr-<gateway>']],
    ],
    conditions: ACCEPTED_PROGRAMMED,
  },
  {
    name: 'a missing parametersRef is InvalidParameters',
    mirrors: 'validation.go, validateGateway ("GatewayConfiguration reference is required")',
    noParametersRef: true,
    conditions: { Accepted: { status: 'False', reason: 'InvalidParameters', message: /parametersRef/ } },
  },
];

/** The shipped template, with a row's change applied. */
export function templateFor(c: ParityCase): Template {
  const raw = loadYaml<Json>(readFileSync(SHIPPED_TEMPLATE, 'utf8'));
  c.template?.(raw);
  return parseTemplate(JSON.stringify(raw), `${SHIPPED_TEMPLATE} (${c.name})`);
}

/** Splits "a.b[x].c\\.d" into steps; "\\." escapes a dot inside a key. */
function steps(path: string): string[] {
  return path.split(/(?<!\\)\./).map((s) => s.replace(/\\\./g, '.'));
}

/** The path without its last step (list selectors are steps too). */
export function parentPath(path: string): string {
  const all = path.split(/(?<!\\)\./);
  const last = all.pop() ?? '';
  const selector = /^(.*)\[[^\]]+\]$/.exec(last);
  if (selector) all.push(selector[1] ?? '');
  return all.filter((s) => s !== '').join('.');
}

/** The value at a path, selecting list items by name ([router]) or index ([0]); undefined when absent. */
export function fieldAt(object: unknown, path: string): unknown {
  let value: unknown = object;
  for (const step of steps(path)) {
    const m = /^([^[]*)((?:\[[^\]]+\])*)$/.exec(step);
    if (!m) return undefined;
    if (m[1]) value = value && typeof value === 'object' ? (value as Json)[m[1]] : undefined;
    for (const [, selector] of (m[2] ?? '').matchAll(/\[([^\]]+)\]/g)) {
      if (!Array.isArray(value)) return undefined;
      value = /^\d+$/.test(selector ?? '') ? value[Number(selector)] : value.find((item: unknown) => (item as Json | undefined)?.name === selector);
    }
  }
  return value;
}

/** `<gateway>` in an expected value stands for the row's Gateway name. */
export function expected(value: unknown, gateway: string): unknown {
  return JSON.parse(JSON.stringify(value).replaceAll('<gateway>', gateway));
}
