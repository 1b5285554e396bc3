// The pure mapping rules of dispatch: which Gateways an observed object affects.
import { WatchedObject } from '../../events/incoming.js';
import { type GatewayKey } from '../../api/gateway-key.js';
import { deploymentOwner, gatewaysByDeploymentName, gatewaysInReach, gatewaysOfClass, gatewaysUsingConfiguration, keyOf, routeGateways, uniqueKeys } from '../../functions/dispatch/gateway-keys.js';
import { GATEWAY_GROUP } from '../../api/names.js';
import { deploymentName } from '../../functions/reconcile/plan/names.js';
import type { Gateway } from '../../api/schemas.js';

const NS = 'team-a';
const OTHER_NS = 'team-b';

interface GatewayOptions {
  namespace?: string;
  className?: string;
  parametersRef?: { group: string; kind: string; name: string };
  addresses?: string[];
}

function gateway(name: string, o: GatewayOptions = {}): Gateway {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: o.namespace ?? NS },
    spec: {
      gatewayClassName: o.className ?? 'gc',
      listeners: [],
      ...(o.parametersRef ? { infrastructure: { parametersRef: o.parametersRef } } : {}),
    },
    ...(o.addresses ? { status: { addresses: o.addresses.map((value) => ({ type: 'IPAddress', value })) } } : {}),
  };
}

function deployment(name: string, ownerReferences?: unknown[], namespace = NS): WatchedObject {
  return WatchedObject.parse({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, ...(ownerReferences ? { ownerReferences } : {}) },
  });
}

function route(spec: Record<string, unknown> | undefined, namespace = NS) {
  return { metadata: { namespace }, ...(spec ? { spec } : {}) };
}

const k = (name: string, namespace = NS): GatewayKey => ({ namespace, name });
const GW_OWNER = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'gw1', uid: 'u1', controller: true };
const GC_REF = { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'cfg' };

describe('keyOf and uniqueKeys', () => {
  it('keyOf: a Gateway is its own key', () => {
    expect(keyOf(gateway('gw1'))).toEqual(k('gw1'));
    expect(keyOf(gateway('gw1', { namespace: OTHER_NS }))).toEqual(k('gw1', OTHER_NS));
  });

  it('uniqueKeys sorts by namespace/name and drops duplicates', () => {
    const keys = [k('b'), k('a', OTHER_NS), k('a'), k('b'), k('c'), k('a'), k('a', OTHER_NS)];
    expect(uniqueKeys(keys)).toEqual([k('a'), k('b'), k('c'), k('a', OTHER_NS)]);
    expect(uniqueKeys([])).toEqual([]);
  });

  it('uniqueKeys keeps keys apart that would collide without the separator', () => {
    expect(uniqueKeys([k('b-c', 'a'), k('c', 'a-b')])).toHaveLength(2);
  });
});

describe('deploymentOwner (Resource mode)', () => {
  it('a Deployment with a controller ownerRef to a Gateway maps to that Gateway', () => {
    expect(deploymentOwner(deployment('sllbr-gw1', [GW_OWNER]))).toEqual(k('gw1'));
    expect(deploymentOwner(deployment('sllbr-gw1', [{ ...GW_OWNER, apiVersion: 'gateway.networking.k8s.io/v1beta1' }]))).toEqual(k('gw1'));
  });

  it('the owner is looked up by the controller flag, not by position', () => {
    const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'u2' };
    expect(deploymentOwner(deployment('sllbr-gw1', [other, GW_OWNER]))).toEqual(k('gw1'));
  });

  it('the namespace is the Deployment\'s own', () => {
    expect(deploymentOwner(deployment('sllbr-gw1', [GW_OWNER], OTHER_NS))).toEqual(k('gw1', OTHER_NS));
  });

  it('a Deployment with no owner maps to nothing', () => {
    expect(deploymentOwner(deployment('sllbr-gw1'))).toBeUndefined();
    expect(deploymentOwner(deployment('sllbr-gw1', []))).toBeUndefined();
  });

  it('a Gateway ref that is not the controller maps to nothing', () => {
    expect(deploymentOwner(deployment('sllbr-gw1', [{ ...GW_OWNER, controller: false }]))).toBeUndefined();
    const { controller: _drop, ...noFlag } = GW_OWNER;
    expect(deploymentOwner(deployment('sllbr-gw1', [noFlag]))).toBeUndefined();
  });

  it('a controller that is not a gateway.networking.k8s.io Gateway maps to nothing', () => {
    expect(deploymentOwner(deployment('d', [{ ...GW_OWNER, kind: 'ReplicaSet', apiVersion: 'apps/v1' }]))).toBeUndefined();
    expect(deploymentOwner(deployment('d', [{ ...GW_OWNER, apiVersion: 'networking.istio.io/v1' }]))).toBeUndefined();
    expect(deploymentOwner(deployment('d', [{ ...GW_OWNER, apiVersion: 'gateway.networking.k8s.io.evil/v1' }]))).toBeUndefined();
    expect(deploymentOwner(deployment('d', [{ ...GW_OWNER, apiVersion: 'gateway.networking.k8s.io' }]))).toBeUndefined();
    expect(deploymentOwner(deployment('d', [{ ...GW_OWNER, kind: 'GatewayClass' }]))).toBeUndefined();
  });
});

describe('gatewaysByDeploymentName (Reference mode)', () => {
  it('the Gateway whose sllbr-<name> it is, in its namespace', () => {
    const gateways = [gateway('x'), gateway('gw.one', { namespace: OTHER_NS }), gateway('y')];
    expect(gatewaysByDeploymentName(gateways, NS, 'sllbr-x')).toEqual([k('x')]);
    expect(gatewaysByDeploymentName(gateways, OTHER_NS, 'sllbr-gw.one')).toEqual([k('gw.one', OTHER_NS)]);
    expect(gatewaysByDeploymentName(gateways, OTHER_NS, 'sllbr-x')).toEqual([]);
  });

  it('finds a Gateway whose long name was hashed into the Deployment name', () => {
    const long = 'g'.repeat(253);
    const gateways = [gateway(long), gateway('x')];
    const name = deploymentName(long);
    expect(name.length).toBeLessThanOrEqual(63);
    expect(gatewaysByDeploymentName(gateways, NS, name)).toEqual([k(long)]);
  });

  it('other names map to nothing', () => {
    const gateways = [gateway('gw1')];
    for (const name of ['sllbr-', 'sllbr', 'coredns', 'x-sllbr-gw1', '']) expect(gatewaysByDeploymentName(gateways, NS, name)).toEqual([]);
  });
});

describe('gatewaysUsingConfiguration', () => {
  it('maps to the Gateways of its namespace whose parametersRef names it', () => {
    const gateways = [
      gateway('a', { parametersRef: GC_REF }),
      gateway('b', { parametersRef: GC_REF }),
      gateway('other-cfg', { parametersRef: { ...GC_REF, name: 'cfg2' } }),
      gateway('no-ref'),
    ];
    expect(gatewaysUsingConfiguration(gateways, NS, 'cfg')).toEqual([k('a'), k('b')]);
  });

  it('not the Gateways of another namespace with the same reference', () => {
    const gateways = [gateway('a', { parametersRef: GC_REF }), gateway('a', { namespace: OTHER_NS, parametersRef: GC_REF })];
    expect(gatewaysUsingConfiguration(gateways, NS, 'cfg')).toEqual([k('a')]);
    expect(gatewaysUsingConfiguration(gateways, OTHER_NS, 'cfg')).toEqual([k('a', OTHER_NS)]);
  });

  it('not a reference with the wrong group or kind', () => {
    const gateways = [
      gateway('wrong-group', { parametersRef: { ...GC_REF, group: 'example.com' } }),
      gateway('wrong-kind', { parametersRef: { ...GC_REF, kind: 'ConfigMap' } }),
      gateway('core-group', { parametersRef: { ...GC_REF, group: '' } }),
    ];
    expect(gatewaysUsingConfiguration(gateways, NS, 'cfg')).toEqual([]);
  });

  it('nothing when no Gateway uses it', () => {
    expect(gatewaysUsingConfiguration([], NS, 'cfg')).toEqual([]);
  });
});

describe('gatewaysOfClass', () => {
  const gateways = [
    gateway('a', { className: 'ours' }),
    gateway('b', { className: 'ours', namespace: OTHER_NS }),
    gateway('c', { className: 'theirs' }),
    gateway('d', { className: 'missing-class' }),
  ];

  it('a GatewayClass maps to every Gateway of the class, in every namespace', () => {
    expect(gatewaysOfClass(gateways, 'ours')).toEqual([k('a'), k('b', OTHER_NS)]);
    expect(gatewaysOfClass(gateways, 'theirs')).toEqual([k('c')]);
    expect(gatewaysOfClass(gateways, 'none')).toEqual([]);
  });
});

describe('routeGateways: parent references', () => {
  it('a parentRef without namespace defaults to the route\'s namespace', () => {
    expect(routeGateways(route({ parentRefs: [{ name: 'gw1' }] }), [])).toEqual([k('gw1')]);
  });

  it('an explicit namespace is respected', () => {
    expect(routeGateways(route({ parentRefs: [{ name: 'gw1', namespace: OTHER_NS }] }), [])).toEqual([k('gw1', OTHER_NS)]);
  });

  it('an explicit Gateway kind and group are accepted', () => {
    expect(routeGateways(route({ parentRefs: [{ name: 'gw1', kind: 'Gateway', group: GATEWAY_GROUP }] }), [])).toEqual([k('gw1')]);
  });

  it('a parentRef of another kind or group is ignored', () => {
    const spec = {
      parentRefs: [
        { name: 'svc', kind: 'Service' },
        { name: 'gw-istio', kind: 'Gateway', group: 'networking.istio.io' },
        { name: 'gw1' },
      ],
    };
    expect(routeGateways(route(spec), [])).toEqual([k('gw1')]);
  });

  it('malformed parentRefs are skipped', () => {
    const spec = { parentRefs: [null, 'gw1', 7, { name: '' }, { name: 42 }, { namespace: NS }, { name: 'gw2', namespace: '' }] };
    expect(routeGateways(route(spec), [])).toEqual([k('gw2')]);
    expect(routeGateways(route({ parentRefs: 'gw1' }), [])).toEqual([]);
    expect(routeGateways(route(undefined), [])).toEqual([]);
  });

  it('several parents are sorted and de-duplicated', () => {
    const spec = { parentRefs: [{ name: 'gw2' }, { name: 'gw1' }, { name: 'gw2', namespace: NS }] };
    expect(routeGateways(route(spec), [])).toEqual([k('gw1'), k('gw2')]);
  });
});

describe('routeGateways: Gateways that still advertise the route\'s VIPs', () => {
  it('a route moved from Gateway A to Gateway B maps to both', () => {
    // The update event carries only the new object (parent B); A still lists the VIP.
    const gateways = [gateway('a', { addresses: ['20.0.0.1'] }), gateway('b')];
    const moved = route({ parentRefs: [{ name: 'b' }], destinationCIDRs: ['20.0.0.1/32'] });
    expect(routeGateways(moved, gateways)).toEqual([k('a'), k('b')]);
  });

  it('a deleted route maps to the Gateway that still advertises its VIP', () => {
    const gateways = [gateway('a', { addresses: ['10.0.0.9', '20.0.0.1'] }), gateway('b', { addresses: ['30.0.0.1'] })];
    // The delete event carries the last object: its parent, and its VIPs.
    const deleted = route({ parentRefs: [{ name: 'a' }], destinationCIDRs: ['20.0.0.1/32'] });
    expect(routeGateways(deleted, gateways)).toEqual([k('a')]);
    // A route whose parent was removed before the deletion: only the addresses name the old parent.
    const orphan = route({ parentRefs: [], destinationCIDRs: ['20.0.0.1/32'] });
    expect(routeGateways(orphan, gateways)).toEqual([k('a')]);
  });

  it('every Gateway advertising any of the VIPs is included', () => {
    const gateways = [gateway('a', { addresses: ['20.0.0.1'] }), gateway('b', { addresses: ['20.0.0.2'] }), gateway('c', { addresses: ['20.0.0.3'] })];
    const r = route({ parentRefs: [{ name: 'd' }], destinationCIDRs: ['20.0.0.1/32', '20.0.0.2/32'] });
    expect(routeGateways(r, gateways)).toEqual([k('a'), k('b'), k('d')]);
  });

  it('Gateways of any namespace are matched by address (a route may have left a Gateway that admitted it from elsewhere)', () => {
    const gateways = [gateway('a', { namespace: OTHER_NS, addresses: ['20.0.0.1'] }), gateway('b', { addresses: ['20.0.0.1'] })];
    const r = route({ parentRefs: [], destinationCIDRs: ['20.0.0.1/32'] });
    expect(routeGateways(r, gateways)).toEqual([k('b'), k('a', OTHER_NS)]);
  });

  it('IPv6 VIPs compare canonically', () => {
    const gateways = [gateway('a', { addresses: ['2001:db8::1'] }), gateway('b', { addresses: ['2001:db8::2'] })];
    expect(routeGateways(route({ destinationCIDRs: ['2001:DB8:0::1/128'] }), gateways)).toEqual([k('a')]);
    expect(routeGateways(route({ destinationCIDRs: ['2001:0db8:0000:0000:0000:0000:0000:0001/128'] }), gateways)).toEqual([k('a')]);
    // Non-canonical text in the status matches too.
    const shouty = [gateway('c', { addresses: ['2001:DB8:0:0::1'] })];
    expect(routeGateways(route({ destinationCIDRs: ['2001:db8::1/128'] }), shouty)).toEqual([k('c')]);
  });

  it('a VIP without a prefix length matches too', () => {
    expect(routeGateways(route({ destinationCIDRs: ['20.0.0.1'] }), [gateway('a', { addresses: ['20.0.0.1'] })])).toEqual([k('a')]);
  });

  it('no match: a Gateway without status, or with other addresses, or non-string CIDRs', () => {
    const gateways = [gateway('a'), gateway('b', { addresses: ['20.0.0.10'] })];
    expect(routeGateways(route({ destinationCIDRs: ['20.0.0.1/32', 7, null] }), gateways)).toEqual([]);
    expect(routeGateways(route({ destinationCIDRs: 'not-a-list' }), [gateway('c', { addresses: ['20.0.0.1'] })])).toEqual([]);
  });
});

describe('gatewaysInReach (Reference mode for a route)', () => {
  it('every Gateway of the namespace, and those elsewhere that admit routes from other namespaces', () => {
    const open: Gateway = { ...gateway('open', { namespace: OTHER_NS }), spec: { gatewayClassName: 'gc', listeners: [{ name: 'l', allowedRoutes: { namespaces: { from: 'All' } } }] } };
    const gateways = [gateway('b'), gateway('a'), gateway('c', { namespace: OTHER_NS }), open];
    expect(gatewaysInReach(gateways, NS)).toEqual([k('b'), k('a'), k('open', OTHER_NS)]);
    expect(gatewaysInReach(gateways, 'empty')).toEqual([k('open', OTHER_NS)]);
  });
});
