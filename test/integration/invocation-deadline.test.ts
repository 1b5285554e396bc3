import type { KubeApi } from '../../functions/kube/kube-api.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { statusOf } from '../support/cluster.js';
import { readDeployment } from '../support/fixtures.js';
import { handlerDeps, invoke } from '../support/handler-deps.js';
import { useWorld } from '../support/world.js';

// One deadline per invocation (docs/design.md §2): once an invocation has
// answered 503, nothing runs on its behalf any more. The case that used to
// break it: a reconcile request that joined a run already in flight for the
// same Gateway. Its own run starts only when the first one ends, and it used
// to get a fresh budget then, outliving the 503 it had already answered and
// writing the Deployment afterwards.

function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * The real API client with two changes: its Gateway reads wait for the test
 * to open a gate (one gate per read, in order), and every request is counted
 * while in flight, so that the test knows when the reconciles have stopped.
 */
function heldReads(api: KubeApi, gates: Array<{ promise: Promise<void> }>): { api: KubeApi; inFlight(): number; writes: string[] } {
  let reads = 0;
  let inFlight = 0;
  const writes: string[] = [];
  // The handler binds the client to each invocation's signal: the bound
  // client is held and counted the same way.
  const held = (inner: KubeApi): KubeApi => Object.fromEntries(
    Object.entries(inner).map(([name, fn]) => [
      name,
      name === 'withSignal'
        ? (signal: AbortSignal): KubeApi => held(inner.withSignal(signal))
        : (...args: unknown[]): Promise<unknown> => {
            inFlight++;
            if (/^(create|replace|annotate)/.test(name)) writes.push(name);
            const gate = name === 'getGateway' ? (gates[reads++]?.promise ?? Promise.resolve()) : Promise.resolve();
            return gate.then(() => (fn as (...a: unknown[]) => Promise<unknown>)(...args)).finally(() => inFlight--);
          },
    ]),
  ) as unknown as KubeApi;
  return { api: held(api), inFlight: () => inFlight, writes };
}

describe('one deadline per invocation', () => {
  const w = useWorld('deadline');

  it('a request that joined a run in flight writes nothing after it answered 503', async () => {
    await w.setup();
    const first = gate();
    const second = gate();
    const r = w.r();
    const held = heldReads(r.api, [first, second]);
    const deps = handlerDeps({ ...r.deps, api: held.api }, { namespaces: [w.ns()] });
    const request = (id: string) => invoke({ kind: 'reconcile', key: w.key(), cause: undefined }, deps, { type: 'reconcile', id }, { budgetMs: 2_000 });

    // A's run holds on its Gateway read; B arrives meanwhile and waits for
    // the next run, which starts when A's run gives up at A's deadline.
    const a = request('a');
    const b = request('b');
    expect(await a).toMatchObject({ next: 'redeliver', outcome: 'deadline-exceeded' });
    expect(await b).toMatchObject({ next: 'redeliver', outcome: 'deadline-exceeded' });

    // Both answered 503. Now let every held read through and wait until no
    // request of either run is in flight any more.
    first.open();
    second.open();
    await waitFor('the reconciles to stop', async () => (held.inFlight() === 0 ? true : undefined), { timeoutMs: 30_000 });

    expect(held.writes).toEqual([]);
    expect(await statusOf(readDeployment(w.ns(), 'sllbr-gw'))).toBe(404);
  });
});
