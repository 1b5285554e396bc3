import { parseIncoming } from '../../events/incoming.js';
import { reconcileEvent } from '../../events/outgoing.js';
import { hintOf, readsOf } from '../../functions/reconcile/plan/gateway-reads.js';
import { GatewayClassSchema } from '../../api/schemas.js';
import { gateway, gatewayClass, GC, NS } from './reconcile-fixtures.js';

const classWithDefault = (name: string, ref: Record<string, string>) =>
  GatewayClassSchema.parse({ ...gatewayClass(undefined, name), spec: { controllerName: 'x', parametersRef: ref } });

describe('observe hints', () => {
  test("a Gateway's own reference is known without its class", () => {
    expect(hintOf(gateway())).toEqual({ gatewayClassName: 'meridio', configuration: { namespace: NS, name: GC }, routeScope: 'same' });
    expect(readsOf(gateway(), undefined)).toEqual({ className: 'meridio', configuration: { namespace: NS, name: GC }, scope: 'same' });
  });

  test('an unreadable reference (another group) names no configuration', () => {
    const gw = gateway({ parametersRef: { group: 'example.com', kind: 'Thing', name: 'x' } });
    expect(hintOf(gw).configuration).toBeNull();
  });

  test('a class default is known only with the classes at hand', () => {
    const gw = gateway({ parametersRef: null });
    expect(hintOf(gw)).toEqual({ gatewayClassName: 'meridio', routeScope: 'same' });
    expect(readsOf(gw, undefined)).toBeNull();
    const cls = classWithDefault('meridio', { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'dflt', namespace: 'infra' });
    expect(hintOf(gw, [cls]).configuration).toEqual({ namespace: 'infra', name: 'dflt' });
    expect(readsOf(gw, cls)?.configuration).toEqual({ namespace: 'infra', name: 'dflt' });
    // A class of another name, or none, gives no default.
    expect(hintOf(gw, []).configuration).toBeNull();
    expect(readsOf(gw, classWithDefault('other', { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'dflt', namespace: 'infra' }))?.configuration).toBeNull();
    // A class reference without a namespace cannot be read.
    expect(hintOf(gw, [classWithDefault('meridio', { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'dflt' })]).configuration).toBeNull();
  });

  test('a reconcile request carries the hint through the CloudEvent, and a malformed one is dropped, not refused', () => {
    const hint = hintOf(gateway());
    const parsed = parseIncoming(reconcileEvent({ namespace: NS, name: 'gw1' }, undefined, hint));
    expect(parsed).toMatchObject({ kind: 'reconcile', key: { namespace: NS, name: 'gw1' }, hint });

    const e = reconcileEvent({ namespace: NS, name: 'gw1' });
    const bad = e.cloneWith({ data: { namespace: NS, name: 'gw1', hint: { gatewayClassName: 42 } } });
    const dropped = parseIncoming(bad);
    expect(dropped).toEqual({ kind: 'reconcile', key: { namespace: NS, name: 'gw1' }, cause: undefined });
  });
});
