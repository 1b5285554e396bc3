// Routing, without an API server: an ApiServerSource event, parsed as the
// front door parses it, → the lists dispatch asks for → the Gateways and
// GatewayClasses it affects. One case per kind of the watched-resources
// table, in Resource mode (the object in the event) and in Reference mode
// (only its name). Expected keys are spelled out.
import { ROLLING, rolloutIndexKey, templateValue } from '../../functions/reconcile/plan/rollout-index.js';
import { parseIncoming, type Incoming } from '../../events/incoming.js';
import { apiServerEvent } from '../../events/outgoing.js';
import { WATCHED_KINDS, WATCHED_RESOURCES, type WatchedKind } from '../../api/watched-resources.js';
import { DeploymentSchema, type Deployment, type Gateway, type GatewayClass } from '../../api/schemas.js';
import type { DispatchScope } from '../../functions/dispatch/target.js';
import { APPLIED_CONFIGURATION_GENERATION, APPLIED_CONFIGURATION_NAME, APPLIED_CONFIGURATION_UID, APPLIED_GATEWAY_GENERATION, CONDITION_ACCEPTED, CONDITION_APPLIED, LABEL_MANAGED_BY, MANAGED_BY_VALUE, TEMPLATE_HASH } from '../../api/names.js';
import { dispatch, listsNeeded, type ApiServerIncoming, type EventLists } from '../../functions/dispatch/dispatch.js';

const CONTROLLER = 'gateway-controller.meridio-2.nordix.org/controller';
const SCOPE = { controllerName: CONTROLLER, namespaces: [] as string[] };
const MERIDIO = 'meridio-2.nordix.org';

function gateway(namespace: string, name: string, o: { className?: string; config?: string; allFrom?: boolean; addresses?: string[] } = {}): Gateway {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { namespace, name },
    spec: {
      gatewayClassName: o.className ?? 'ours',
      listeners: [{ name: 'l', protocol: 'TCP', port: 80, ...(o.allFrom ? { allowedRoutes: { namespaces: { from: 'All' } } } : {}) }],
      ...(o.config ? { infrastructure: { parametersRef: { group: MERIDIO, kind: 'GatewayConfiguration', name: o.config } } } : {}),
    },
    ...(o.addresses ? { status: { addresses: o.addresses.map((value) => ({ type: 'IPAddress', value })) } } : {}),
  } as Gateway;
}

function gatewayClass(name: string, defaultConfig?: { namespace: string; name: string }): GatewayClass {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name },
    spec: { controllerName: CONTROLLER, ...(defaultConfig ? { parametersRef: { group: MERIDIO, kind: 'GatewayConfiguration', ...defaultConfig } } : {}) },
  } as GatewayClass;
}

const apiVersionOf = (kind: WatchedKind): string => `${WATCHED_RESOURCES[kind].group}/${WATCHED_RESOURCES[kind].version}`;

/** A Resource-mode event as the receive adapter sends it, through the front door's parser. */
function resourceEvent(kind: WatchedKind, object: Record<string, unknown> & { metadata: { name: string; namespace?: string } }, action: 'add' | 'update' | 'delete' = 'update'): ApiServerIncoming {
  const incoming: Incoming = parseIncoming(apiServerEvent(action, { apiVersion: apiVersionOf(kind), kind, ...object }, '/apis/v1/namespaces/meridio'), false);
  if (incoming.kind !== 'apiserver') throw new Error(`not routed as an API event: ${JSON.stringify(incoming)}`);
  return incoming;
}

/** A Reference-mode event: the name only. */
function refEvent(kind: WatchedKind, name: string, namespace?: string): ApiServerIncoming {
  return { kind: 'apiserver', mode: 'ref', action: 'update', resource: { apiVersion: apiVersionOf(kind), kind, name, namespace }, object: undefined };
}

/** listsNeeded, then dispatch, with lists served from `world`; also returns the order lists were asked for. */
function route(incoming: ApiServerIncoming, world: { classes: GatewayClass[]; gateways: Gateway[]; deployments?: Deployment[] }, scope: DispatchScope = SCOPE) {
  const asked: string[][] = [];
  let lists: EventLists = {};
  for (let needed = listsNeeded(incoming, lists, scope); needed.length > 0; needed = listsNeeded(incoming, lists, scope)) {
    asked.push(needed);
    for (const name of needed) {
      if (name === 'classes') lists = { ...lists, classes: world.classes };
      if (name === 'local') lists = { ...lists, local: world.gateways.filter((g) => g.metadata.namespace === incoming.resource.namespace) };
      if (name === 'served') lists = { ...lists, served: world.gateways.filter((g) => scope.namespaces.length === 0 || scope.namespaces.includes(g.metadata.namespace ?? '')) };
      if (name === 'census') lists = { ...lists, census: { deployments: world.deployments ?? [] } };
    }
  }
  const affected = dispatch(incoming, lists, scope);
  return { asked, keys: affected.targets.map((t) => `${t.key.namespace}/${t.key.name}`), classes: affected.classes, affected };
}

const WORLD = {
  classes: [gatewayClass('ours', { namespace: 'conf', name: 'shared' }), gatewayClass('plain')],
  gateways: [
    gateway('a', 'gw-own', { className: 'plain', config: 'cfg' }),
    gateway('a', 'gw-default'),
    gateway('b', 'gw-default-b'),
    gateway('b', 'gw-own-b', { config: 'cfg' }),
    gateway('b', 'gw-open', { className: 'plain', allFrom: true, addresses: ['20.0.0.1'] }),
  ],
};

describe('routing an API event, for every watched kind', () => {
  it('covers every kind of the watched-resources table', () => {
    expect([...WATCHED_KINDS].sort()).toEqual(['Deployment', 'Gateway', 'GatewayClass', 'GatewayConfiguration', 'L34Route']);
  });

  it('Gateway: that Gateway, read from nothing, with the hint its object gives', () => {
    const r = route(resourceEvent('Gateway', gateway('a', 'gw-own', { className: 'plain', config: 'cfg' })), WORLD);
    expect(r).toMatchObject({ asked: [], keys: ['a/gw-own'], classes: [] });
    expect(r.affected.targets[0]?.hint).toEqual({ gatewayClassName: 'plain', routeScope: 'same', configuration: { namespace: 'a', name: 'cfg' } });
    expect(route(refEvent('Gateway', 'gw-x', 'a'), WORLD)).toMatchObject({ asked: [], keys: ['a/gw-x'], classes: [] });
    // A delete is routed the same way: the reconcile finds it gone.
    expect(route(resourceEvent('Gateway', gateway('a', 'gone'), 'delete'), WORLD).keys).toEqual(['a/gone']);
  });

  it('Deployment: its controller owner in Resource mode, read from nothing; by name in Reference mode, from its namespace', () => {
    const owned = { metadata: { name: 'sllbr-gw-own', namespace: 'a', ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'gw-own', uid: 'u', controller: true }] } };
    expect(route(resourceEvent('Deployment', owned), WORLD)).toMatchObject({ asked: [], keys: ['a/gw-own'] });
    const foreign = { metadata: { name: 'sllbr-gw-own', namespace: 'a', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'x', uid: 'u', controller: true }] } };
    expect(route(resourceEvent('Deployment', foreign), WORLD)).toMatchObject({ asked: [], keys: [] });
    expect(route(refEvent('Deployment', 'sllbr-gw-default', 'a'), WORLD)).toMatchObject({ asked: [['local']], keys: ['a/gw-default'] });
    expect(route(refEvent('Deployment', 'unrelated', 'a'), WORLD)).toMatchObject({ asked: [['local']], keys: [] });
  });

  it('GatewayConfiguration used by its own namespace only: the classes once and that namespace, nothing more', () => {
    const r = route(resourceEvent('GatewayConfiguration', { metadata: { name: 'cfg', namespace: 'b' } }), WORLD);
    expect(r).toMatchObject({ asked: [['local', 'classes']], keys: ['b/gw-own-b'], classes: [] });
    expect(r.affected.listed?.classes).toBe(WORLD.classes);
  });

  it('GatewayConfiguration that a class names as its default: then the served Gateways, and the class itself', () => {
    const r = route(resourceEvent('GatewayConfiguration', { metadata: { name: 'shared', namespace: 'conf' } }), WORLD);
    // The GatewayClasses are listed once; the Gateways everywhere only once a class names it.
    expect(r.asked).toEqual([['local', 'classes'], ['served']]);
    expect(r.asked.flat().filter((l) => l === 'classes')).toHaveLength(1);
    // Gateways of class "ours" without their own reference; gw-own-b has its own.
    expect(r.keys).toEqual(['a/gw-default', 'b/gw-default-b']);
    expect(r.classes).toEqual(['ours']);
    expect(route(refEvent('GatewayConfiguration', 'shared', 'conf'), WORLD).keys).toEqual(['a/gw-default', 'b/gw-default-b']);
  });

  it('GatewayClass: every Gateway of the class in the served namespaces, and the class', () => {
    const r = route(resourceEvent('GatewayClass', gatewayClass('plain') as unknown as { metadata: { name: string } }), WORLD);
    expect(r).toMatchObject({ asked: [['served']], keys: ['a/gw-own', 'b/gw-open'], classes: ['plain'] });
    expect(route(refEvent('GatewayClass', 'ours'), WORLD)).toMatchObject({ asked: [['served']], keys: ['a/gw-default', 'b/gw-default-b', 'b/gw-own-b'], classes: ['ours'] });
  });

  it('L34Route: the Gateway its parentRef names and any Gateway that advertises its VIP; by reach in Reference mode', () => {
    const route34 = { metadata: { name: 'r', namespace: 'a' }, spec: { parentRefs: [{ name: 'gw-default' }], destinationCIDRs: ['20.0.0.1/32'] } };
    expect(route(resourceEvent('L34Route', route34), WORLD)).toMatchObject({ asked: [['served']], keys: ['a/gw-default', 'b/gw-open'], classes: [] });
    // Reference mode: its namespace's Gateways and those admitting routes from anywhere.
    expect(route(refEvent('L34Route', 'r', 'a'), WORLD).keys).toEqual(['a/gw-default', 'a/gw-own', 'b/gw-open']);
  });

  it('keeps to the served namespaces', () => {
    const scope = { controllerName: CONTROLLER, namespaces: ['a'] };
    expect(route(refEvent('GatewayClass', 'ours'), WORLD, scope).keys).toEqual(['a/gw-default']);
    expect(route(refEvent('Gateway', 'gw-x', 'b'), WORLD, scope).keys).toEqual([]);
  });
});

describe('a settled LB rollout under the rollout budget', () => {
  // The rollout index label as this controller's reconciles leave it: `rolling` from the rollout write until the owner's reconcile sees it settled, the template's digest after.
  const lbObject = (gw: string, o: { hash: string; generation?: number; index?: string; controller?: string }) => ({
    metadata: {
      name: `sllbr-${gw}`,
      namespace: 'a',
      generation: o.generation ?? 1,
      labels: { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, [rolloutIndexKey(o.controller ?? CONTROLLER)]: o.index ?? templateValue(o.hash) },
      annotations: { [APPLIED_CONFIGURATION_NAME]: 'c', [APPLIED_CONFIGURATION_UID]: 'u', [APPLIED_CONFIGURATION_GENERATION]: '1', [APPLIED_GATEWAY_GENERATION]: '1', [TEMPLATE_HASH]: o.hash },
      ownerReferences: [{ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: gw, uid: `u-${gw}`, controller: true }],
    },
    spec: { replicas: 1, template: { spec: { containers: [{ name: 'lb', image: 'lb' }] } } },
    status: { observedGeneration: o.generation ?? 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1 },
  });
  const accepted = (gw: Gateway): Gateway => ({ ...gw, status: { conditions: [{ type: CONDITION_ACCEPTED, status: 'True', reason: 'Accepted', message: `Gateway accepted by ${CONTROLLER}`, lastTransitionTime: '2026-01-01T00:00:00Z' }, { type: CONDITION_APPLIED, status: 'True', reason: 'Applied', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }] } }) as Gateway;
  const world = {
    classes: WORLD.classes,
    gateways: ['g1', 'g2', 'g3'].map((n) => accepted(gateway('a', n))),
    deployments: [lbObject('g1', { hash: 'new', index: ROLLING }), lbObject('g2', { hash: 'old' }), lbObject('g3', { hash: 'old' })].map((d) => DeploymentSchema.parse({ apiVersion: 'apps/v1', kind: 'Deployment', ...d })),
  };
  const budgeted: DispatchScope = { ...SCOPE, rollout: { budget: 1, templateHash: 'new' } };

  it('wakes the owner and the first Gateway in line, from one census', () => {
    expect(route(resourceEvent('Deployment', lbObject('g1', { hash: 'new', index: ROLLING })), world, budgeted)).toMatchObject({ asked: [['census']], keys: ['a/g1', 'a/g2'] });
  });

  it('once the owner took the rolling label back, its later status events (and any settled Deployment that held no slot) read no census', () => {
    const later = { ...world, deployments: [lbObject('g1', { hash: 'new' }), ...world.deployments.slice(1)].map((d) => DeploymentSchema.parse({ apiVersion: 'apps/v1', kind: 'Deployment', ...d })) };
    expect(route(resourceEvent('Deployment', lbObject('g1', { hash: 'new' })), later, budgeted)).toMatchObject({ asked: [], keys: ['a/g1'] });
    expect(route(resourceEvent('Deployment', lbObject('g2', { hash: 'old' })), later, budgeted)).toMatchObject({ asked: [], keys: ['a/g2'] });
  });

  it('a Gateway deleted (or being deleted) leaves the line: its event wakes the next, from one census', () => {
    const rolling = { ...world, deployments: [lbObject('g1', { hash: 'new', generation: 2, index: ROLLING }), ...world.deployments.slice(1)].map((d) => DeploymentSchema.parse({ apiVersion: 'apps/v1', kind: 'Deployment', ...d })) };
    // g1 rolls and holds the slot; g1 is deleted: its Deployment, left for the garbage collector, holds it no more.
    const gone = { ...rolling, gateways: rolling.gateways.slice(1) };
    expect(route(resourceEvent('Gateway', gateway('a', 'g1'), 'delete'), gone, budgeted)).toMatchObject({ asked: [['census']], keys: ['a/g1', 'a/g2'] });
    const deleting = { ...rolling, gateways: [{ ...rolling.gateways[0], metadata: { ...rolling.gateways[0]?.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } } as Gateway, ...rolling.gateways.slice(1)] };
    expect(route(resourceEvent('Gateway', deleting.gateways[0] as Gateway & { metadata: { name: string } }), deleting, budgeted)).toMatchObject({ asked: [['census']], keys: ['a/g1', 'a/g2'] });
    // Reference mode says it was deleted too.
    expect(route({ ...refEvent('Gateway', 'g1', 'a'), action: 'delete' }, gone, budgeted)).toMatchObject({ asked: [['census']], keys: ['a/g1', 'a/g2'] });
    // Any other Gateway event reads nothing more.
    expect(route(resourceEvent('Gateway', gateway('a', 'g1')), rolling, budgeted)).toMatchObject({ asked: [], keys: ['a/g1'] });
    expect(route(resourceEvent('Gateway', gateway('a', 'g1'), 'delete'), gone)).toMatchObject({ asked: [], keys: ['a/g1'] });
  });

  it('a deleted LB Deployment frees its slot, rolling or not: its event wakes the next', () => {
    const gone = { ...world, deployments: world.deployments.slice(1) };
    expect(route(resourceEvent('Deployment', lbObject('g1', { hash: 'new', generation: 2 }), 'delete'), gone, budgeted)).toMatchObject({ asked: [['census']], keys: ['a/g1', 'a/g2'] });
    expect(route({ ...refEvent('Deployment', 'sllbr-g1', 'a'), action: 'delete' }, gone, budgeted)).toMatchObject({ asked: [['local', 'census']], keys: ['a/g1', 'a/g2'] });
  });

  it('counts only the Gateways and Deployments of this controller', () => {
    const theirs: GatewayClass = { ...gatewayClass('theirs'), spec: { controllerName: 'example.com/other' } } as GatewayClass;
    // g0, of another controller's class, rolls and is first by name; g2 is next of ours.
    const mixed = {
      classes: [...world.classes, theirs],
      gateways: [accepted(gateway('a', 'g0', { className: 'theirs' })), ...world.gateways],
      deployments: [
        DeploymentSchema.parse({ apiVersion: 'apps/v1', kind: 'Deployment', ...lbObject('g0', { hash: 'old', generation: 2, index: ROLLING, controller: 'example.com/other' }) }),
        DeploymentSchema.parse({ apiVersion: 'apps/v1', kind: 'Deployment', ...lbObject('g00', { hash: 'old', controller: 'example.com/other' }) }),
        ...world.deployments,
      ],
    };
    expect(route(resourceEvent('Deployment', lbObject('g1', { hash: 'new', index: ROLLING })), mixed, budgeted)).toMatchObject({ asked: [['census']], keys: ['a/g1', 'a/g2'] });
  });

  it('reads nothing more while the rollout is in progress, or without a budget', () => {
    expect(route(resourceEvent('Deployment', { ...lbObject('g1', { hash: 'new', generation: 2, index: ROLLING }), status: { observedGeneration: 1 } }), world, budgeted)).toMatchObject({ asked: [], keys: ['a/g1'] });
    expect(route(resourceEvent('Deployment', lbObject('g1', { hash: 'new', index: ROLLING })), world)).toMatchObject({ asked: [], keys: ['a/g1'] });
  });
});

describe('what is not an API event is not routed here', () => {
  it('another kind of the same name in another group is ignored by the parser', () => {
    const incoming = parseIncoming(apiServerEvent('update', { apiVersion: 'example.com/v1', kind: 'Gateway', metadata: { name: 'x', namespace: 'a' } }, '/s'), false);
    expect(incoming.kind).toBe('ignored');
  });
});
