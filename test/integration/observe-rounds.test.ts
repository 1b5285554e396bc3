import { CustomObjectsApi } from '@kubernetes/client-node';
import { eventTargets } from '../support/handler-deps.js';
import { resyncPass } from '../../functions/dispatch/resync.js';
import { GATEWAY_CLASSES } from '../../functions/kube/kube-api.js';
import type { KubeApi } from '../../functions/kube/kube-api.js';
import { observe } from '../../functions/reconcile/observe.js';
import { hintOf } from '../../functions/reconcile/plan/gateway-reads.js';
import { type ObserveHint } from '../../events/observe-hint.js';
import { GatewayClassSchema } from '../../api/schemas.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { WatchedObject } from '../../events/incoming.js';
import { adminConfig } from '../support/cluster.js';
import { createClass, createConfiguration, createGateway, readGateway } from '../support/fixtures.js';
import { CONTROLLER_NAME } from '../support/reconciler.js';
import { useWorld } from '../support/world.js';

// observe reads in one round when the event's hint is right, and reads the
// same objects whatever the hint says (docs/design.md §2, invariant "a hint
// decides what is read first, never what is true"). Rounds are told apart by
// the real requests themselves: a read belongs to the first round when it
// started before any read had come back.

interface Call {
  method: string;
  args: unknown[];
  /** Reads that had already come back when this one started. */
  after: number;
}

function recording(api: KubeApi): { api: KubeApi; calls: Call[] } {
  const calls: Call[] = [];
  let done = 0;
  const wrapped = new Proxy(api, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        calls.push({ method: String(prop), args, after: done });
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          done++;
        }
      };
    },
  });
  return { api: wrapped, calls };
}

// The deployment controller keeps updating the Deployment's status meanwhile: compare it by identity.
const stable = (o: Awaited<ReturnType<typeof observe>>): unknown => ({ ...o, deployment: o.deployment?.metadata.uid ?? null });

const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);

describe('observe: one read round with a right hint', () => {
  const w = useWorld('rounds');

  async function observed(hint?: ObserveHint, key = w.key()): Promise<{ result: Awaited<ReturnType<typeof observe>>; calls: Call[] }> {
    const r = recording(w.r().api);
    const result = await observe(r.api, key, hint);
    return { result, calls: r.calls };
  }

  it('a Gateway naming its own GatewayConfiguration: 5 reads in one round with the hint, two rounds without, the same objects either way', async () => {
    await w.setup();
    expect((await reconcile(w.key(), w.r().deps)).outcome).toBe('applied');
    const gateway = await readGateway(w.ns(), 'gw');

    const hinted = await observed(hintOf(gateway));
    expect(hinted.calls.map((c) => c.method).sort()).toEqual(['getDeployment', 'getGateway', 'getGatewayClass', 'getGatewayConfiguration', 'listL34Routes']);
    expect(hinted.calls.every((c) => c.after === 0)).toBe(true);

    const bare = await observed();
    expect(bare.calls).toHaveLength(5);
    expect(bare.calls.some((c) => c.after > 0)).toBe(true);
    expect(stable(hinted.result)).toEqual(stable(bare.result));
  });

  it('a wrong hint costs reads, never the truth', async () => {
    await w.setup();
    await createConfiguration(w.ns(), 'other');
    expect((await reconcile(w.key(), w.r().deps)).outcome).toBe('applied');
    const truth = (await observed()).result;

    const wrong: ObserveHint = { gatewayClassName: 'someone-elses', configuration: { namespace: w.ns(), name: 'other' }, routeScope: 'selector' };
    const misled = await observed(wrong);
    expect(stable(misled.result)).toEqual(stable(truth));
    // The class and the configuration the Gateway really names were read again.
    expect(misled.calls.filter((c) => c.method === 'getGatewayClass').map((c) => c.args[0])).toEqual(['someone-elses', w.cls()]);
    expect(misled.calls.filter((c) => c.method === 'getGatewayConfiguration').map((c) => c.args[1])).toEqual(['other', 'cfg']);

    // "No configuration" and "same namespace only" when the Gateway says otherwise.
    const none = await observed({ gatewayClassName: w.cls(), configuration: null, routeScope: 'same' });
    expect(stable(none.result)).toEqual(stable(truth));
  });

  it('a class default: one round with the classes known, three without', async () => {
    const ns = w.ns();
    const cls = `dflt-${ns}`;
    await createConfiguration(ns, 'class-cfg');
    await createClass(cls, CONTROLLER_NAME, { parametersRef: { group: 'meridio-2.nordix.org', kind: 'GatewayConfiguration', name: 'class-cfg', namespace: ns } });
    const gateway = await createGateway(ns, 'plain', cls);
    const gatewayClass = GatewayClassSchema.parse(await custom().getClusterCustomObject({ ...GATEWAY_CLASSES, name: cls }));

    const key = w.key('plain');
    const hinted = await observed(hintOf(gateway, [gatewayClass]), key);
    expect(hinted.calls.every((c) => c.after === 0)).toBe(true);
    expect(hinted.result.gatewayConfiguration?.metadata.name).toBe('class-cfg');

    // Without the classes the hint names the class but not its default: two rounds.
    const partial = await observed(hintOf(gateway), key);
    expect(partial.calls.filter((c) => c.after > 0).map((c) => c.method)).toEqual(['getGatewayConfiguration']);

    const bare = await observed(undefined, key);
    const configurationRead = bare.calls.find((c) => c.method === 'getGatewayConfiguration');
    const classRead = bare.calls.find((c) => c.method === 'getGatewayClass');
    expect(classRead && configurationRead && configurationRead.after > classRead.after).toBe(true);
    expect(stable(hinted.result)).toEqual(stable(bare.result));
    expect(stable(partial.result)).toEqual(stable(bare.result));
  });

  it('dispatch hands the hints on: the resync knows class defaults, a Resource-mode Gateway event carries its object', async () => {
    await w.setup();
    const gateway = await readGateway(w.ns(), 'gw');
    const scope = { controllerName: CONTROLLER_NAME, namespaces: [w.ns()] };
    // Not reconciled yet: the resync finds it drifted.
    const resync = (await resyncPass(w.r().api, scope, w.r().deps)).targets;
    expect(resync).toEqual([{ key: w.key(), hint: { gatewayClassName: w.cls(), configuration: { namespace: w.ns(), name: 'cfg' }, routeScope: 'same' } }]);

    const fromEvent = await eventTargets(w.r().api, scope, {
      kind: 'apiserver',
      mode: 'resource',
      action: 'update',
      resource: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'gw', namespace: w.ns() },
      object: WatchedObject.parse(gateway),
    });
    expect(fromEvent).toEqual([{ key: w.key(), hint: { gatewayClassName: w.cls(), configuration: { namespace: w.ns(), name: 'cfg' }, routeScope: 'same' } }]);
  });
});
