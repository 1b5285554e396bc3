// The pure planning of the Warning Events on L34Routes that name a Gateway
// key and do not attach: no Gateway, a Gateway that is not ours, one of ours
// whose listeners do not admit the route. The writing (said once, zero writes
// on a no-op) is tested against the API server in
// test/integration/route-feedback.test.ts.
import { planRouteFeedback } from '../../functions/reconcile/plan/route-feedback.js';
import { eventName } from '../../functions/reconcile/record-event.js';
import { GatewaySchema, L34RouteSchema, type Gateway, type L34Route } from '../../api/schemas.js';
import { CONTROLLER, GW, NS, gateway, gatewayClass, observed, route } from './reconcile-fixtures.js';

const withUid = (r: L34Route): L34Route => L34RouteSchema.parse({ ...r, metadata: { ...r.metadata, uid: `uid-${r.metadata.namespace}-${r.metadata.name}` } });
const naming = (name: string, ref: Record<string, string> = { name: GW }, namespace = NS): L34Route => withUid(route(name, ['20.0.0.1/32'], [ref], namespace));

function withListeners(listeners: unknown[]): Gateway {
  const gw = gateway();
  return GatewaySchema.parse({ ...gw, spec: { ...gw.spec, listeners } });
}

const reasons = (routes: L34Route[], overrides: Parameters<typeof observed>[0] = {}) =>
  planRouteFeedback(observed({ routes, ...overrides }), CONTROLLER).map((e) => ({ route: `${e.regarding.namespace}/${e.regarding.name}`, reason: e.event.reason }));

describe('planRouteFeedback', () => {
  it('(a) no Gateway: a GatewayNotFound Warning on every route naming the key, regarding the route with its uid', () => {
    const planned = planRouteFeedback(observed({ gateway: null, gatewayClass: null, routes: [naming('r2'), naming('r1'), naming('other', { name: 'gw-else' })] }), CONTROLLER);
    expect(planned.map((e) => e.regarding)).toEqual([
      { apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'L34Route', namespace: NS, name: 'r1', uid: `uid-${NS}-r1` },
      { apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'L34Route', namespace: NS, name: 'r2', uid: `uid-${NS}-r2` },
    ]);
    for (const e of planned) {
      expect(e.event).toMatchObject({ type: 'Warning', reason: 'GatewayNotFound', action: 'Attach' });
      expect(e.event.note).toContain(`Gateway ${NS}/${GW}, which does not exist`);
    }
  });

  it('(a) a parentRef with an explicit namespace names that namespace\'s key', () => {
    const cross = naming('r', { name: GW, namespace: NS }, 'team-b');
    expect(reasons([cross], { gateway: null })).toEqual([{ route: 'team-b/r', reason: 'GatewayNotFound' }]);
    // Without a namespace it names its own namespace's Gateway: another key.
    expect(reasons([naming('r', { name: GW }, 'team-b')], { gateway: null })).toEqual([]);
  });

  it('(b) a Gateway of another controller, or of a class that does not exist: GatewayNotOurs', () => {
    const other = planRouteFeedback(observed({ gatewayClass: gatewayClass('example.com/other-controller'), routes: [naming('r')] }), CONTROLLER);
    expect(other).toHaveLength(1);
    expect(other[0]?.event).toMatchObject({ type: 'Warning', reason: 'GatewayNotOurs' });
    expect(other[0]?.event.note).toContain('of controller example.com/other-controller');
    const missing = planRouteFeedback(observed({ gatewayClass: null, routes: [naming('r')] }), CONTROLLER);
    expect(missing[0]?.event).toMatchObject({ reason: 'GatewayNotOurs' });
    expect(missing[0]?.event.note).toContain('GatewayClass meridio, which does not exist');
  });

  it('(c) ours: a route that attaches gets nothing; Same refuses another namespace (NotAllowedByListeners)', () => {
    expect(reasons([naming('r')])).toEqual([]);
    const cross = naming('r', { name: GW, namespace: NS }, 'team-b');
    const planned = planRouteFeedback(observed({ routes: [cross, naming('fine')] }), CONTROLLER);
    expect(planned.map((e) => [e.regarding.name, e.event.reason])).toEqual([['r', 'NotAllowedByListeners']]);
    expect(planned[0]?.regarding.namespace).toBe('team-b');
    expect(planned[0]?.event.note).toContain('listener all: allowedRoutes.namespaces.from is Same');
  });

  it('(c) kinds that leave out L34Route, and a Selector that does not select the namespace', () => {
    const kinds = withListeners([{ name: 'l', port: 1, protocol: 'TCP', allowedRoutes: { kinds: [{ kind: 'HTTPRoute' }] } }]);
    const k = planRouteFeedback(observed({ gateway: kinds, routes: [naming('r')] }), CONTROLLER);
    expect(k[0]?.event.reason).toBe('NotAllowedByListeners');
    expect(k[0]?.event.note).toContain('allowedRoutes.kinds lists gateway.networking.k8s.io/HTTPRoute, not meridio-2.nordix.org/L34Route');
    const selector = withListeners([{ name: 'l', port: 1, protocol: 'TCP', allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { lb: 'shared' } } } } }]);
    const labelled = (name: string, labels: Record<string, string>) => ({ metadata: { name, labels } });
    const namespaces = [labelled('team-b', { other: 'x' }), labelled('team-c', { lb: 'shared' })];
    const s = planRouteFeedback(observed({ gateway: selector, namespaces, routes: [naming('b', { name: GW, namespace: NS }, 'team-b'), naming('c', { name: GW, namespace: NS }, 'team-c')] }), CONTROLLER);
    expect(s.map((e) => [e.regarding.name, e.event.reason])).toEqual([['b', 'NotAllowedByListeners']]);
    expect(s[0]?.event.note).toContain('does not select namespace team-b');
  });

  it('(c) sectionName naming no listener (NoMatchingParent), or a listener that does not admit the route (NotAllowedByListeners)', () => {
    const gw = withListeners([
      { name: 'same', port: 1, protocol: 'TCP' },
      { name: 'open', port: 2, protocol: 'TCP', allowedRoutes: { namespaces: { from: 'All' } } },
    ]);
    const to = (name: string, sectionName: string) => naming(name, { name: GW, namespace: NS, sectionName }, 'team-b');
    const planned = planRouteFeedback(observed({ gateway: gw, routes: [to('a-open', 'open'), to('b-same', 'same'), to('c-missing', 'nope')] }), CONTROLLER);
    expect(planned.map((e) => [e.regarding.name, e.event.reason])).toEqual([
      ['b-same', 'NotAllowedByListeners'],
      ['c-missing', 'NoMatchingParent'],
    ]);
    expect(planned[0]?.event.note).toContain('listener same:');
    expect(planned[0]?.event.note).not.toContain('listener open');
    expect(planned[1]?.event.note).toContain('sectionName nope names no listener');
    expect(planned[1]?.event.note).toContain('its listeners: same, open');
  });

  it('a Gateway being deleted says nothing yet; a route with a parentRef of another kind is not about this key', () => {
    const deleting = gateway({ deletionTimestamp: '2025-01-01T00:00:00Z' });
    expect(reasons([naming('r', { name: GW, namespace: NS }, 'team-b')], { gateway: deleting })).toEqual([]);
    expect(reasons([naming('r', { name: GW, kind: 'Service', group: '' })], { gateway: null })).toEqual([]);
  });

  it('is deterministic, so the Event name (object, type, reason, note) is the same on every reconcile', () => {
    const scenario = observed({ gateway: null, routes: [naming('r')] });
    const [first] = planRouteFeedback(scenario, CONTROLLER);
    const [again] = planRouteFeedback(structuredClone(scenario), CONTROLLER);
    expect(first && again && eventName(first.regarding, first.event)).toBe(again && eventName(again.regarding, again.event));
    // A route re-created under the same name is another object: another Event.
    const recreated = L34RouteSchema.parse({ ...naming('r'), metadata: { name: 'r', namespace: NS, uid: 'uid-new' } });
    const [other] = planRouteFeedback(observed({ gateway: null, routes: [recreated] }), CONTROLLER);
    expect(other && eventName(other.regarding, other.event)).not.toBe(first && eventName(first.regarding, first.event));
  });
});
