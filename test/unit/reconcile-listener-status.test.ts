import { listenerStatuses, listenersEqual, storedListeners } from '../../functions/reconcile/plan/listener-status.js';
import { GatewaySchema, type Gateway } from '../../api/schemas.js';
import { gateway, LATER, NOW, observed, route, settle } from './reconcile-fixtures.js';

// Listener status is pure: the Gateway's listeners, the namespace's routes and
// the Gateway's Programmed verdict in; one entry per listener out.

function withListeners(listeners: unknown[], status?: Record<string, unknown>): Gateway {
  const base = gateway();
  return GatewaySchema.parse({ ...base, spec: { ...base.spec, listeners }, ...(status ? { status } : {}) });
}

const cond = (l: { conditions: Array<{ type: string }> }, type: string): unknown => l.conditions.find((c) => c.type === type);

describe('listener status', () => {
  it('gives one entry per listener, in spec order, with L34Route as the supported kind', () => {
    const gw = withListeners([
      { name: 'tcp', port: 80, protocol: 'TCP' },
      { name: 'udp', port: 53, protocol: 'UDP' },
    ]);
    const out = listenerStatuses({ gateway: gw, routes: [], gatewayProgrammed: 'True', now: NOW });
    expect(out.map((l) => l.name)).toEqual(['tcp', 'udp']);
    for (const l of out) {
      expect(l.supportedKinds).toEqual([{ group: 'meridio-2.nordix.org', kind: 'L34Route' }]);
      expect(l.attachedRoutes).toBe(0);
      expect(cond(l, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted', observedGeneration: 1, lastTransitionTime: NOW });
      expect(cond(l, 'Programmed')).toMatchObject({ status: 'True', reason: 'Programmed' });
      expect(cond(l, 'ResolvedRefs')).toMatchObject({ status: 'True', reason: 'ResolvedRefs' });
      expect(cond(l, 'Conflicted')).toMatchObject({ status: 'False', reason: 'NoConflicts' });
    }
  });

  it('refuses protocols other than TCP and UDP with UnsupportedProtocol, no kinds and no routes', () => {
    const gw = withListeners([{ name: 'web', port: 80, protocol: 'HTTP' }, { name: 'tcp', port: 80, protocol: 'TCP' }]);
    const [web, tcp] = listenerStatuses({ gateway: gw, routes: [route('r', ['10.0.0.1/32'])], gatewayProgrammed: 'True', now: NOW });
    expect(web).toMatchObject({ name: 'web', supportedKinds: [], attachedRoutes: 0 });
    expect(cond(web!, 'Accepted')).toMatchObject({ status: 'False', reason: 'UnsupportedProtocol' });
    expect(cond(web!, 'Programmed')).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(tcp).toMatchObject({ name: 'tcp', attachedRoutes: 1 });
  });

  it('counts routes attached by sectionName or to the whole Gateway', () => {
    const gw = withListeners([{ name: 'a', port: 80, protocol: 'TCP' }, { name: 'b', port: 81, protocol: 'TCP' }]);
    const routes = [
      route('all', ['10.0.0.1/32']),
      route('to-a', ['10.0.0.2/32'], [{ name: 'gw1', sectionName: 'a' }]),
      route('to-a-too', ['10.0.0.3/32'], [{ name: 'gw1', sectionName: 'a' }]),
      route('to-missing', ['10.0.0.4/32'], [{ name: 'gw1', sectionName: 'zz' }]),
      route('other-gateway', ['10.0.0.5/32'], [{ name: 'gw2' }]),
      route('other-namespace', ['10.0.0.6/32'], [{ name: 'gw1' }], 'elsewhere'),
      route('two-parents', ['10.0.0.7/32'], [{ name: 'gw1' }, { name: 'gw2' }]),
    ];
    const out = listenerStatuses({ gateway: gw, routes, gatewayProgrammed: 'True', now: NOW });
    expect(out.map((l) => [l.name, l.attachedRoutes])).toEqual([['a', 3], ['b', 1]]);
  });

  it('reports unsupported route kinds as ResolvedRefs=False InvalidRouteKinds', () => {
    const gw = withListeners([
      { name: 'only-bad', port: 80, protocol: 'TCP', allowedRoutes: { kinds: [{ kind: 'HTTPRoute' }] } },
      { name: 'mixed', port: 81, protocol: 'TCP', allowedRoutes: { kinds: [{ kind: 'TCPRoute' }, { group: 'meridio-2.nordix.org', kind: 'L34Route' }] } },
    ]);
    const [bad, mixed] = listenerStatuses({ gateway: gw, routes: [route('r', ['10.0.0.1/32'])], gatewayProgrammed: 'True', now: NOW });
    expect(bad).toMatchObject({ supportedKinds: [], attachedRoutes: 0 });
    expect(cond(bad!, 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'InvalidRouteKinds' });
    expect(mixed).toMatchObject({ supportedKinds: [{ group: 'meridio-2.nordix.org', kind: 'L34Route' }], attachedRoutes: 1 });
    expect(cond(mixed!, 'ResolvedRefs')).toMatchObject({ status: 'False', reason: 'InvalidRouteKinds' });
  });

  it('marks listeners of one transport sharing a port as Conflicted', () => {
    const gw = withListeners([
      { name: 'a', port: 80, protocol: 'TCP', hostname: 'a.example' },
      { name: 'b', port: 80, protocol: 'TCP', hostname: 'b.example' },
      { name: 'c', port: 80, protocol: 'UDP' },
    ]);
    const out = listenerStatuses({ gateway: gw, routes: [], gatewayProgrammed: 'True', now: NOW });
    expect(out.map((l) => (cond(l, 'Conflicted') as { status: string }).status)).toEqual(['True', 'True', 'False']);
    expect(cond(out[0]!, 'Programmed')).toMatchObject({ status: 'False', reason: 'Invalid' });
  });

  it('follows the Gateway for Programmed', () => {
    const gw = withListeners([{ name: 'a', port: 80, protocol: 'TCP' }]);
    expect(cond(listenerStatuses({ gateway: gw, routes: [], gatewayProgrammed: undefined, now: NOW })[0]!, 'Programmed')).toMatchObject({ status: 'Unknown', reason: 'Pending' });
    expect(cond(listenerStatuses({ gateway: gw, routes: [], gatewayProgrammed: 'False', now: NOW })[0]!, 'Programmed')).toMatchObject({ status: 'False', reason: 'Invalid' });
  });

  it('keeps lastTransitionTime while the status holds, and reads back equal', () => {
    const gw = withListeners([{ name: 'a', port: 80, protocol: 'TCP' }]);
    const first = listenerStatuses({ gateway: gw, routes: [], gatewayProgrammed: 'True', now: NOW });
    const stored = withListeners([{ name: 'a', port: 80, protocol: 'TCP' }], { listeners: first });
    expect(listenersEqual(first, storedListeners(stored))).toBe(true);
    const again = listenerStatuses({ gateway: stored, routes: [], gatewayProgrammed: 'True', now: LATER });
    expect(again).toEqual(first);
    const attached = listenerStatuses({ gateway: stored, routes: [route('r', ['10.0.0.1/32'])], gatewayProgrammed: 'True', now: LATER });
    expect(listenersEqual(attached, storedListeners(stored))).toBe(false);
    expect(attached[0]!.conditions.every((c) => c.lastTransitionTime === NOW)).toBe(true);
  });

  it('is part of the one status the planner writes, and a change in attachment alone is a status change', () => {
    // No GatewayConfiguration: the plan writes status without a Deployment write.
    const first = settle(observed({ gatewayConfiguration: null }));
    expect(first.status?.listeners?.map((l) => l.name)).toEqual(['all']);
    const stored = gateway({ status: JSON.parse(JSON.stringify(first.status)) as Record<string, unknown> });
    expect(settle(observed({ gatewayConfiguration: null, gateway: stored, now: LATER })).statusChanged).toBe(false);
    const attached = settle(observed({ gatewayConfiguration: null, gateway: stored, now: LATER, routes: [route('r', ['10.0.0.1/32'])] }));
    expect(attached.statusChanged).toBe(true);
    expect(attached.status?.listeners?.[0]?.attachedRoutes).toBe(1);
  });
});
