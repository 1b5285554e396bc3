// The resync's seam to the planners (functions/dispatch/resync-plan.ts): what
// the lists give must make the same plan as what observe reads, and "drifted"
// must mean exactly "the reconcile would write".
import fc from 'fast-check';
import { classDrifts, gatewayDrifts, indexRoutes, observedFromLists, objectKey, planWrites, type ListedInputs, type PlanningContext } from '../../functions/dispatch/resync-plan.js';
import { planClass } from '../../functions/gatewayclass/plan.js';
import { GatewayClassSchema, GatewaySchema, NamespaceSchema, type Deployment, type Gateway, type GatewayClass, type L34Route } from '../../api/schemas.js';
import { CONTROLLER, GC, GW, NS, NOW, gateway, gatewayClass, gatewayConfiguration, invoke, observed, plan, route, type Scenario } from './reconcile-fixtures.js';

const OTHER_NS = 'team-b';

/** The Scenario of a converged Gateway: created, then reconciled until nothing is written. */
function converged(start: Scenario = observed()): Scenario {
  let o = start;
  for (let i = 0; i < 4; i++) {
    const r = invoke(o);
    if (!planWrites(r.first)) return o;
    o = r.next;
  }
  throw new Error('did not converge');
}

function listed(o: Scenario, extra: { routes?: L34Route[]; classes?: GatewayClass[] } = {}): ListedInputs {
  const routesByParent = new Map<string, L34Route[]>();
  indexRoutes(routesByParent, extra.routes ?? o.routes);
  const classes = [...(o.gatewayClass ? [o.gatewayClass] : []), ...(extra.classes ?? [])];
  const configuration = o.gatewayConfiguration;
  return {
    classes: new Map(classes.map((c) => [c.metadata.name, c])),
    configurations: new Map(configuration ? [[objectKey(configuration.metadata.namespace, configuration.metadata.name), configuration]] : []),
    routesByParent,
    namespaces: o.namespaces,
  };
}

function context(o: Scenario, now = NOW): PlanningContext {
  return { input: { template: o.template, settings: o.settings }, now };
}

const drifts = (o: Scenario, deployment: Deployment | null = o.deployment, inputs = listed(o)): boolean => gatewayDrifts(o.gateway as Gateway, deployment, inputs, context(o));

describe('gatewayDrifts', () => {
  it('an in-sync Gateway has not drifted, whatever the time', () => {
    const o = converged();
    expect(planWrites(plan(o))).toBe(false);
    expect(drifts(o)).toBe(false);
    expect(gatewayDrifts(o.gateway as Gateway, o.deployment, listed(o), context(o, '2031-01-01T00:00:00Z'))).toBe(false);
  });

  it('a new GatewayConfiguration generation, a Deployment edited by hand, a missing Deployment, a lost status: drifted', () => {
    const o = converged();
    const newer = gatewayConfiguration({ horizontalScaling: { replicas: 4, enforceReplicas: true } }, { generation: 2 });
    expect(drifts({ ...o, gatewayConfiguration: newer })).toBe(true);
    const deployment = o.deployment as Deployment;
    const edited: Deployment = {
      ...deployment,
      spec: { ...deployment.spec, template: { ...deployment.spec.template, spec: { ...deployment.spec.template.spec, containers: deployment.spec.template.spec.containers.map((c) => ({ ...c, image: 'example.invalid/hand-edited:1' })) } } },
    };
    expect(drifts(o, edited)).toBe(true);
    expect(drifts(o, null)).toBe(true);
    expect(drifts({ ...o, gateway: GatewaySchema.parse({ ...o.gateway, status: {} }) })).toBe(true);
  });

  it('a Gateway of another controller is left alone, unless it still shows our Accepted (the reconcile resets it)', () => {
    const o = converged();
    const theirs = gatewayClass('example.com/other', 'theirs');
    const moved = { ...o, gateway: GatewaySchema.parse({ ...o.gateway, spec: { ...(o.gateway as Gateway).spec, gatewayClassName: 'theirs' } }), gatewayClass: theirs };
    expect(drifts(moved, null, listed(moved))).toBe(true);
    const reset = invoke({ ...moved, deployment: null }).next;
    expect(drifts(reset, null, listed(reset))).toBe(false);
    const never = { ...observed({ gateway: gateway({ className: 'theirs' }), gatewayClass: theirs }) };
    expect(drifts(never, null, listed(never))).toBe(false);
  });

  it('drifted exactly when the reconcile would write', () => {
    const o = converged();
    for (const variant of [o, { ...o, deployment: null }, { ...o, gatewayConfiguration: null }, { ...o, gatewayConfiguration: gatewayConfiguration({}, { generation: 3 }) }]) {
      expect(drifts(variant, variant.deployment, listed(variant))).toBe(planWrites(plan(variant)));
    }
  });

  it('reads the class default of a Gateway without its own parametersRef', () => {
    const cls = GatewayClassSchema.parse({ metadata: { name: 'meridio' }, spec: { controllerName: CONTROLLER, parametersRef: { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: GC, namespace: NS } } });
    const o = converged(observed({ gateway: gateway({ parametersRef: null }), gatewayClass: cls }));
    expect(drifts(o)).toBe(false);
    // Without the class, the default is unknown: Accepted=False, a write.
    expect(drifts(o, o.deployment, { ...listed(o), classes: new Map() })).toBe(true);
  });
});

describe('routes by parent', () => {
  it('a route is indexed under every Gateway a parentRef names, defaulting the namespace to its own', () => {
    const index = new Map<string, L34Route[]>();
    const r = route('r', ['20.0.0.1/32'], [{ name: GW }, { name: 'gw2', namespace: OTHER_NS }, { name: 'svc', kind: 'Service', group: '' }]);
    indexRoutes(index, [r]);
    expect([...index.keys()].sort()).toEqual([objectKey(NS, GW), objectKey(OTHER_NS, 'gw2')]);
  });

  // The property behind the index: observe gives the planner every route of
  // the namespace (of every namespace for a wide listener); the lists give it
  // only the routes that name the Gateway. Both plans are the same.
  it('the plan from the index equals the plan from every route observe would read', () => {
    const gatewayNames = [GW, 'gw2'];
    const namespaces = [NS, OTHER_NS];
    const arbRoute = fc.record({
      name: fc.string({ minLength: 1, maxLength: 6 }).map((s) => `r-${Buffer.from(s).toString('hex')}`),
      namespace: fc.constantFrom(...namespaces),
      parents: fc.array(fc.record({ name: fc.constantFrom(...gatewayNames), namespace: fc.option(fc.constantFrom(...namespaces), { nil: undefined }), sectionName: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }) }), { minLength: 0, maxLength: 2 }),
      vip: fc.integer({ min: 1, max: 250 }),
    });
    const arbListeners = fc.array(fc.record({ name: fc.constantFrom('a', 'b', 'c'), from: fc.constantFrom('Same', 'All', 'Selector') }), { minLength: 1, maxLength: 3 });
    fc.assert(
      fc.property(fc.array(arbRoute, { maxLength: 12 }), arbListeners, fc.boolean(), (specs, listeners, labelled) => {
        const routes = specs.map((s) =>
          route(s.name, [`20.0.0.${s.vip}/32`], s.parents.map((p) => ({ name: p.name, ...(p.namespace ? { namespace: p.namespace } : {}), ...(p.sectionName ? { sectionName: p.sectionName } : {}) })), s.namespace),
        );
        const uniqueListeners = [...new Map(listeners.map((l) => [l.name, l])).values()];
        const gw = GatewaySchema.parse({
          ...gateway(),
          spec: {
            ...gateway().spec,
            listeners: uniqueListeners.map((l, i) => ({ name: l.name, protocol: 'TCP', port: 80 + i, allowedRoutes: { namespaces: { from: l.from, ...(l.from === 'Selector' ? { selector: { matchLabels: { shared: 'yes' } } } : {}) } } })),
          },
        });
        const nsList = [NamespaceSchema.parse({ metadata: { name: NS } }), NamespaceSchema.parse({ metadata: { name: OTHER_NS, labels: labelled ? { shared: 'yes' } : {} } })];
        const wide = uniqueListeners.some((l) => l.from !== 'Same');
        const selector = uniqueListeners.some((l) => l.from === 'Selector') && !uniqueListeners.some((l) => l.from === 'All');
        const base = converged(observed({ gateway: gw }));
        const asObserved: Scenario = { ...base, routes: wide ? routes : routes.filter((r) => r.metadata.namespace === NS), namespaces: selector ? nsList : null };
        const fromLists = observedFromLists(base.gateway as Gateway, base.deployment, { ...listed(base, { routes }), namespaces: nsList });
        expect(plan({ ...base, ...fromLists })).toEqual(plan(asObserved));
      }),
      { numRuns: 150 },
    );
  });
});

describe('classDrifts', () => {
  const template = observed().template.deployment;
  const ctx = { controllerName: CONTROLLER, template, now: NOW };
  const configuration = gatewayConfiguration();
  const configurations = new Map([[objectKey(NS, GC), configuration]]);

  function storedFromPlan(cls: GatewayClass, bundleVersion: string | undefined): GatewayClass {
    const p = planClass({ name: cls.metadata.name, gatewayClass: cls, configuration, bundleVersion, controllerName: CONTROLLER, template, now: NOW });
    return GatewayClassSchema.parse({ ...cls, status: p.status });
  }

  it('in sync: no; another bundle version or a missing default: yes; another controller\'s class: never', () => {
    const cls = GatewayClassSchema.parse({ metadata: { name: 'meridio', generation: 1 }, spec: { controllerName: CONTROLLER, parametersRef: { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: GC, namespace: NS } } });
    const stored = storedFromPlan(cls, 'v1.6.3');
    expect(classDrifts(stored, configurations, 'v1.6.3', ctx)).toBe(false);
    expect(classDrifts(stored, configurations, 'v1.7.0', ctx)).toBe(true);
    expect(classDrifts(stored, new Map(), 'v1.6.3', ctx)).toBe(true);
    expect(classDrifts(gatewayClass('example.com/other', 'theirs'), configurations, 'v1.6.3', ctx)).toBe(false);
  });
});
