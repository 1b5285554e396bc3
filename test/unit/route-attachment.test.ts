// Gateway API allowedRoutes for L34Routes: Same (the default), All and
// Selector, listener kinds and sectionName. Meridio-2 has no such check: any
// route whose parentRef names the Gateway counts, from any namespace.
import { gatewayAddresses } from '../../functions/reconcile/plan/addresses.js';
import { routeAttaches, routeScope } from '../../functions/reconcile/plan/route-attachment.js';
import { GatewaySchema, type Gateway } from '../../api/schemas.js';
import { GW, NS, gateway, route } from './reconcile-fixtures.js';

function withListeners(listeners: unknown[]): Gateway {
  const gw = gateway();
  return GatewaySchema.parse({ ...gw, spec: { ...gw.spec, listeners } });
}

const listener = (allowedRoutes?: unknown, name = 'l1') => ({ name, port: 1, protocol: 'TCP', ...(allowedRoutes ? { allowedRoutes } : {}) });
const labels = new Map<string, Record<string, string>>([
  [NS, { 'kubernetes.io/metadata.name': NS }],
  ['team-b', { 'kubernetes.io/metadata.name': 'team-b', lb: 'shared' }],
  ['team-c', { 'kubernetes.io/metadata.name': 'team-c' }],
]);
const from = (namespace: string) => route('r', ['20.0.0.1/32'], [{ name: GW, namespace: NS }], namespace);

describe('routeAttaches: allowedRoutes', () => {
  it('Same (the default): only the Gateway\'s namespace', () => {
    for (const gw of [withListeners([listener()]), withListeners([listener({ namespaces: { from: 'Same' } })])]) {
      expect(routeScope(gw)).toBe('same');
      expect(routeAttaches(from(NS), gw, labels)).toBe(true);
      expect(routeAttaches(from('team-b'), gw, labels)).toBe(false);
    }
  });

  it('All: any namespace', () => {
    const gw = withListeners([listener({ namespaces: { from: 'All' } })]);
    expect(routeScope(gw)).toBe('all');
    expect(routeAttaches(from('team-b'), gw, labels)).toBe(true);
    expect(routeAttaches(from(NS), gw, labels)).toBe(true);
  });

  it('Selector: namespaces whose labels match, and nothing without a selector or labels', () => {
    const gw = withListeners([listener({ namespaces: { from: 'Selector', selector: { matchLabels: { lb: 'shared' } } } })]);
    expect(routeScope(gw)).toBe('selector');
    expect(routeAttaches(from('team-b'), gw, labels)).toBe(true);
    expect(routeAttaches(from('team-c'), gw, labels)).toBe(false);
    // The Gateway's own namespace is not special under Selector.
    expect(routeAttaches(from(NS), gw, labels)).toBe(false);
    expect(routeAttaches(from('team-b'), gw, new Map())).toBe(false);
    const noSelector = withListeners([listener({ namespaces: { from: 'Selector' } })]);
    expect(routeAttaches(from('team-b'), noSelector, labels)).toBe(false);
    const expressions = withListeners([listener({ namespaces: { from: 'Selector', selector: { matchExpressions: [{ key: 'lb', operator: 'Exists' }] } } })]);
    expect(routeAttaches(from('team-b'), expressions, labels)).toBe(true);
  });

  it('the widest listener decides what must be read', () => {
    expect(routeScope(withListeners([listener(), listener({ namespaces: { from: 'Selector', selector: {} } }, 'l2')]))).toBe('selector');
    expect(routeScope(withListeners([listener({ namespaces: { from: 'Selector', selector: {} } }), listener({ namespaces: { from: 'All' } }, 'l2')]))).toBe('all');
  });

  it('sectionName: only the named listener is asked', () => {
    const gw = withListeners([listener(undefined, 'same'), listener({ namespaces: { from: 'All' } }, 'open')]);
    const to = (sectionName: string) => route('r', ['20.0.0.1/32'], [{ name: GW, namespace: NS, sectionName }], 'team-b');
    expect(routeAttaches(to('open'), gw, labels)).toBe(true);
    expect(routeAttaches(to('same'), gw, labels)).toBe(false);
    expect(routeAttaches(to('missing'), gw, labels)).toBe(false);
  });

  it('kinds: a listener that lists kinds must list L34Route of meridio-2.nordix.org', () => {
    const only = (kinds: unknown[]) => withListeners([listener({ kinds })]);
    expect(routeAttaches(from(NS), only([{ group: 'meridio-2.nordix.org', kind: 'L34Route' }]), labels)).toBe(true);
    expect(routeAttaches(from(NS), only([{ kind: 'HTTPRoute' }]), labels)).toBe(false);
    expect(routeAttaches(from(NS), only([{ kind: 'L34Route' }]), labels)).toBe(false);
  });

  it('a route that is not allowed adds no address', () => {
    const gw = withListeners([listener()]);
    expect(gatewayAddresses(gw, [from('team-b')], labels)).toEqual([]);
    expect(gatewayAddresses(gw, [from(NS)], labels)).toEqual([{ type: 'IPAddress', value: '20.0.0.1' }]);
  });
});
