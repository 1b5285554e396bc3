// Properties of the planner over generated situations: a previous state
// produced by the planner itself from other inputs, then drifted by "others"
// (HPA, VPA, kubectl edits, an older controller), then current inputs.
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { CONDITION_ACCEPTED, CONDITION_APPLIED, CONDITION_PROGRAMMED } from '../../api/names.js';
import type { WriteFailure } from '../../functions/reconcile/plan/plan-types.js';
import { DeploymentSchema, type Condition, type Deployment } from '../../api/schemas.js';
import { GC_UID, GW, LATER, NAD_ANNOTATION, NS, gateway, gatewayClass, gatewayConfiguration, observed, route, withStatus, invoke, plan, settle, type Scenario } from './reconcile-fixtures.js';

const nad = (name: string, iface: string) => ({ type: 'NAD', nad: { name, namespace: NS, interface: iface } });

const arbConfigSpec = fc.record({
  horizontalScaling: fc.record({ replicas: fc.integer({ min: 1, max: 4 }), enforceReplicas: fc.boolean() }),
  internalSubnets: fc.constantFrom(
    [{ cidr: '192.168.100.0/24' }],
    [{ cidr: 'fd00::/64' }],
    [{ cidr: '10.0.0.0/24' }, { cidr: 'fd00::/64' }],
    [{ cidr: '10.0.0.0/24' }, { cidr: 'fd00::/64' }],
    [{ cidr: '192.168.100.0/24' }],
    [{ cidr: 'fd00::/64' }],
    [{ cidr: '0.0.0.0/0' }],
  ),
  networkAttachments: fc.shuffledSubarray([nad('internal', 'int0'), nad('ext', 'ext0'), nad('tmpl-net', 'tmpl9')]),
  verticalScaling: fc.record({
    containers: fc.shuffledSubarray([
      { name: 'router', resources: { requests: { cpu: '1000m', memory: '1Gi' } } },
      { name: 'stateless-lb', resources: { limits: { cpu: '2', memory: '1536Mi' } } },
      { name: 'nfqlb', resources: { requests: { cpu: 0.5 } }, resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'NotRequired' }] },
    ]).chain((containers) =>
      fc.tuple(...containers.map((c) => fc.boolean().map((enforceResources) => ({ ...c, enforceResources })))),
    ),
  }),
});

const arbGateway = fc.record({
  generation: fc.integer({ min: 1, max: 3 }),
  labels: fc.dictionary(fc.constantFrom('team', 'app', 'tier'), fc.constantFrom('x', 'y'), { maxKeys: 2 }),
  annotations: fc.dictionary(fc.constantFrom('note', 'prometheus.io/scrape'), fc.constantFrom('a', 'b'), { maxKeys: 2 }),
  hasRef: fc.constantFrom(true, true, true, true, true, true, true, false),
});

const DRIFTS = ['replicas', 'resources', 'labels', 'env', 'nad-order', 'service-account', 'status', 'no-annotations'] as const;
type Drift = (typeof DRIFTS)[number];

const arbSituation = fc.record({
  gateway: arbGateway,
  config: arbConfigSpec,
  configGeneration: fc.integer({ min: 1, max: 3 }),
  configRecreated: fc.boolean(),
  previous: fc.option(
    // `same`: the previous invocation saw the current inputs, so only drift
    // (possibly none) separates the live state from the desired one.
    fc.record({ same: fc.boolean(), gateway: arbGateway, config: arbConfigSpec, drifts: fc.subarray([...DRIFTS]) }),
    { nil: undefined },
  ),
  foreign: fc.constantFrom(false, false, false, true),
  ours: fc.constantFrom(true, true, true, true, false),
  templateHash: fc.constantFrom('h1', 'h2'),
  routes: fc.array(
    fc.record({
      cidrs: fc.subarray(['20.0.0.1/32', '20.0.0.2/32', 'fd00::1/128', '20.0.0.0/24']),
      parent: fc.constantFrom(GW, GW, 'other'),
    }),
    { maxLength: 3 },
  ),
});

type Situation = typeof arbSituation extends fc.Arbitrary<infer T> ? T : never;


function gatewayOf(g: Situation['gateway']) {
  return gateway({
    generation: g.generation,
    labels: g.labels,
    annotations: g.annotations,
    ...(g.hasRef ? {} : { parametersRef: null }),
  });
}

function drift(d: Deployment, drifts: Drift[]): Deployment | null {
  const x = structuredClone(d);
  const router = x.spec.template.spec.containers.find((c) => c.name === 'router');
  for (const kind of drifts) {
    switch (kind) {
      case 'replicas':
        x.spec.replicas = 9;
        break;
      case 'resources':
        x.spec.template.spec.containers[0]!.resources = { requests: { cpu: '7' } };
        break;
      case 'labels':
        x.metadata.labels = { ...x.metadata.labels, 'example.com/by': 'ops' };
        x.spec.template.metadata = {
          ...x.spec.template.metadata,
          annotations: { ...x.spec.template.metadata?.annotations, 'kubectl.kubernetes.io/restartedAt': 'then' },
        };
        break;
      case 'env':
        if (router) router.env = router.env?.filter((e) => e.name !== 'POD_UID');
        break;
      case 'nad-order': {
        const value = x.spec.template.metadata?.annotations?.[NAD_ANNOTATION];
        if (value !== undefined) {
          x.spec.template.metadata!.annotations![NAD_ANNOTATION] = JSON.stringify([...(JSON.parse(value) as unknown[])].reverse());
        }
        break;
      }
      case 'service-account':
        x.spec.template.spec.serviceAccountName = 'other';
        break;
      case 'status':
        x.status = { observedGeneration: x.metadata.generation ?? 1, replicas: 2, availableReplicas: 1 };
        break;
      case 'no-annotations':
        x.metadata.annotations = {};
        break;
    }
  }
  return DeploymentSchema.parse(x);
}

function build(s: Situation): Scenario {
  const routes = s.routes.map((r, i) => route(`r${i}`, r.cidrs, [{ name: r.parent }]));
  const configuration = gatewayConfiguration(s.config, {
    generation: s.configGeneration,
    uid: s.configRecreated ? 'uid-gc-recreated' : GC_UID,
  });
  let base = observed({
    gateway: gatewayOf(s.gateway),
    gatewayConfiguration: configuration,
    gatewayClass: s.ours ? gatewayClass() : gatewayClass('example.com/other'),
    routes,
  });
  base = { ...base, template: { ...base.template, hash: s.templateHash } };
  if (s.foreign) {
    base.deployment = DeploymentSchema.parse({
      metadata: { name: `sllbr-${GW}`, namespace: NS, resourceVersion: '3' },
      spec: { template: { spec: { containers: [{ name: 'x' }] } } },
    });
  }
  if (s.previous !== undefined) {
    const before = s.previous.same
      ? { ...base, gatewayClass: gatewayClass() }
      : observed({
          gateway: gatewayOf(s.previous.gateway),
          gatewayConfiguration: gatewayConfiguration(s.previous.config, { generation: 1 }),
          routes,
          deployment: base.deployment,
        });
    const { next } = invoke(before);
    base = {
      ...base,
      deployment: next.deployment && !s.foreign ? drift(next.deployment, s.previous.drifts) : base.deployment,
      gateway: withStatus(base.gateway!, (next.gateway?.status as never) ?? null),
    };
  }
  return base;
}

const conditionOf = (conditions: Condition[] | undefined, type: string) => conditions?.find((c) => c.type === type);

// The oracle for invariants 1 and 3, written from docs/design.md §6 rather
// than from the planner's own functions: the five record annotations a
// Deployment rendered from these inputs must carry, spelled out here.
function expectedRecord(o: Scenario): Record<string, string> {
  const cfg = o.gatewayConfiguration!;
  return {
    'meridio-2.nordix.org/applied-gatewayconfiguration-name': cfg.metadata.name,
    'meridio-2.nordix.org/applied-gatewayconfiguration-uid': cfg.metadata.uid ?? '',
    'meridio-2.nordix.org/applied-gatewayconfiguration-generation': String(cfg.metadata.generation ?? 0),
    'meridio-2.nordix.org/applied-gateway-generation': String(o.gateway!.metadata.generation ?? 0),
    'meridio-2.nordix.org/template-hash': o.template.hash,
  };
}

const RECORD_KEYS = [
  'meridio-2.nordix.org/applied-gatewayconfiguration-name',
  'meridio-2.nordix.org/applied-gatewayconfiguration-uid',
  'meridio-2.nordix.org/applied-gatewayconfiguration-generation',
  'meridio-2.nordix.org/applied-gateway-generation',
  'meridio-2.nordix.org/template-hash',
];

/** The record annotations a live Deployment carries (absent keys are left out). */
function recordOf(d: Deployment | null): Record<string, string> {
  const annotations = d?.metadata.annotations ?? {};
  return Object.fromEntries(RECORD_KEYS.filter((k) => k in annotations).map((k) => [k, annotations[k] as string]));
}

describe('plan properties', () => {
  it('is deterministic: plan(x) deep-equals plan(x), byte for byte', () => {
    fc.assert(
      fc.property(arbSituation, (s) => {
        const o = build(s);
        const a = plan(o);
        const b = plan(structuredClone(o));
        expect(b).toEqual(a);
        expect(JSON.stringify(b)).toBe(JSON.stringify(a));
      }),
    );
  });

  it('converges in one invocation: re-planning the result asks for no write, no status, no Event', () => {
    fc.assert(
      fc.property(arbSituation, (s) => {
        const o = build(s);
        const { first, plan: final, next } = invoke(o);
        if (first.deployment.action !== 'none') expect(final.deployment).toEqual({ action: 'none' });
        const again = settle({ ...next, now: LATER });
        expect(again.deployment).toEqual({ action: 'none' });
        expect(again.statusChanged).toBe(false);
        expect(again.events).toEqual([]);
        // Same inputs, same status, byte for byte (lastTransitionTime included).
        if (again.status !== null) {
          expect(JSON.stringify(again.status.conditions)).toBe(JSON.stringify(next.gateway?.status?.conditions ?? []));
        }
      }),
    );
  });

  it('stamps the current inputs on every write, and updates carry the live resourceVersion', () => {
    fc.assert(
      fc.property(arbSituation, (s) => {
        const o = build(s);
        const p = plan(o);
        fc.pre(p.deployment.action === 'create' || p.deployment.action === 'update');
        // Narrows the type only: fc.pre above has discarded every other case.
        if (p.deployment.action !== 'create' && p.deployment.action !== 'update') return;
        expect(recordOf(p.deployment.object)).toEqual(expectedRecord(o));
        if (p.deployment.action === 'update') {
          expect(p.deployment.object.metadata.resourceVersion).toBe(o.deployment?.metadata.resourceVersion);
          expect(p.deployment.object.metadata.uid).toBe(o.deployment?.metadata.uid);
        } else {
          expect(o.deployment).toBeNull();
        }
      }),
    );
  });

  it('never sets Programmed or Accepted to False on a transient or persistent write failure', () => {
    fc.assert(
      fc.property(arbSituation, fc.constantFrom<WriteFailure['class']>('transient', 'persistent'), (s, kind) => {
        const o = build(s);
        const stored = o.gateway?.status?.conditions;
        const { plan: p } = invoke(o, { class: kind, code: 503, message: 'unavailable' });
        fc.pre(p.outcome === 'write-failed');
        for (const type of [CONDITION_PROGRAMMED, CONDITION_ACCEPTED]) {
          if (conditionOf(stored, type)?.status !== 'False') {
            expect(conditionOf(p.status?.conditions, type)?.status).not.toBe('False');
          }
        }
        // Applied=True despite the failure only when the live annotations
        // already record the current inputs (a failed drift repair).
        // The record is compared with the five annotation values spelled
        // out from the inputs (expectedRecord), not with the planner's own reader.
        const recorded = isDeepStrictEqual(recordOf(o.deployment), expectedRecord(o));
        expect(conditionOf(p.status?.conditions, CONDITION_APPLIED)?.status === 'True').toBe(recorded);
      }),
    );
  });

  it('reports Applied=True exactly when the Deployment records the current inputs', () => {
    fc.assert(
      fc.property(arbSituation, (s) => {
        const o = build(s);
        const { plan: p, next } = invoke(o);
        fc.pre(p.outcome === 'applied' || p.outcome === 'in-sync');
        const matches = isDeepStrictEqual(recordOf(next.deployment), expectedRecord(o));
        expect(conditionOf(p.status?.conditions, CONDITION_APPLIED)?.status === 'True').toBe(matches);
        expect(matches).toBe(true);
      }),
    );
  });
});
