// The page-by-page join of Gateways with their LB Deployments
// (functions/dispatch/resync-merge.ts): whatever the page sizes, every
// Gateway is handed on once, in order, with exactly its own Deployment or
// none, and never a page more than it needs. Against the real API server's
// order: test/integration/resync-pages.test.ts.
import fc from 'fast-check';
import { deploymentKey, joinPages, pagesOfArray, type Joined } from '../../functions/dispatch/resync-merge.js';
import { objectKey } from '../../functions/dispatch/resync-plan.js';
import { deploymentName } from '../../functions/reconcile/plan/names.js';
import type { Deployment, Gateway } from '../../api/schemas.js';

function gatewayOf(namespace: string, name: string): Gateway {
  return { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { namespace, name }, spec: { gatewayClassName: 'c', listeners: [] } } as unknown as Gateway;
}

function deploymentOf(namespace: string, name: string): Deployment {
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { namespace, name }, spec: {} } as unknown as Deployment;
}

/** As the API server lists: by "namespace/name". */
function inKeyOrder<T extends { metadata: { namespace?: string; name: string } }>(items: T[]): T[] {
  const key = (o: T): string => objectKey(o.metadata.namespace, o.metadata.name);
  return [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** Pages of `items`, counting the pages asked for. */
function counted<T>(items: T[], pageSize: number): { pages: AsyncGenerator<T[], void, undefined>; asked: () => number } {
  let asked = 0;
  async function* pages(): AsyncGenerator<T[], void, undefined> {
    for (let i = 0; i < items.length || i === 0; i += pageSize) {
      asked++;
      yield items.slice(i, i + pageSize);
    }
  }
  return { pages: pages(), asked: () => asked };
}

async function join(gateways: Gateway[], deployments: Deployment[], gatewayPage: number, deploymentPage: number): Promise<{ pages: Joined[][]; asked: number }> {
  const pages: Joined[][] = [];
  const d = counted(inKeyOrder(deployments), deploymentPage);
  await joinPages(pagesOfArray(inKeyOrder(gateways), gatewayPage), d.pages, async (joined) => {
    pages.push(joined);
  });
  return { pages, asked: d.asked() };
}

const namespaceArb = fc.constantFrom('a', 'a-b', 'a.b', 'ab', 'b');
// Names that sort differently once prefixed would show here: '-', '.', digits.
const shortNameArb = fc.stringMatching(/^[a-c0-9][a-c0-9.-]{0,4}[a-c0-9]$/);
// Long enough that sllbr-<name> is cut and hashed (names.ts).
const longNameArb = fc.stringMatching(/^[a-c][a-c0-9-]{60,70}[a-c]$/);

const worldArb = fc.record({
  gateways: fc.uniqueArray(fc.record({ namespace: namespaceArb, name: fc.oneof({ weight: 9, arbitrary: shortNameArb }, { weight: 1, arbitrary: longNameArb }), deployed: fc.boolean() }), {
    selector: (g) => `${g.namespace}/${g.name}`,
    maxLength: 60,
  }),
  strays: fc.array(fc.record({ namespace: namespaceArb, name: shortNameArb }), { maxLength: 10 }),
  gatewayPage: fc.integer({ min: 1, max: 7 }),
  deploymentPage: fc.integer({ min: 1, max: 7 }),
});

describe('joinPages', () => {
  it('every Gateway once, in key order, with its own Deployment or none; none missed while names keep their order', async () => {
    await fc.assert(fc.asyncProperty(worldArb, async (w) => {
      const gateways = w.gateways.map((g) => gatewayOf(g.namespace, g.name));
      const owned = w.gateways.filter((g) => g.deployed).map((g) => deploymentOf(g.namespace, deploymentName(g.name)));
      // Deployments of no Gateway (another owner's, or a deleted Gateway's).
      const strays = w.strays.map((s) => deploymentOf(s.namespace, `x-${s.name}`));
      const all = [...owned, ...strays];
      const byKey = new Map(all.map((d) => [objectKey(d.metadata.namespace, d.metadata.name), d]));
      const { pages } = await join(gateways, all, w.gatewayPage, w.deploymentPage);

      const joined = pages.flat();
      expect(joined.map((j) => j.gateway)).toEqual(inKeyOrder(gateways));
      expect(pages.every((p) => p.length <= w.gatewayPage)).toBe(true);
      for (const j of joined) {
        // Never another Gateway's Deployment.
        if (j.deployment !== undefined) expect(j.deployment).toBe(byKey.get(deploymentKey(j.gateway)));
        // A name kept whole keeps its order among the Deployments: never missed.
        if (deploymentName(j.gateway.metadata.name) === `sllbr-${j.gateway.metadata.name}`) expect(j.deployment).toBe(byKey.get(deploymentKey(j.gateway)));
      }
    }), { numRuns: 300 });
  });

  it('asks for no Deployment page beyond the last Gateway', async () => {
    const gateways = ['gw-0', 'gw-1', 'gw-2', 'gw-3'].map((n) => gatewayOf('a', n));
    const deployments = [...['gw-0', 'gw-1', 'gw-2', 'gw-3'].map((n) => deploymentOf('a', `sllbr-${n}`)), ...['z-1', 'z-2', 'z-3', 'z-4'].map((n) => deploymentOf('b', `sllbr-${n}`))];
    const { pages, asked } = await join(gateways, deployments, 2, 2);
    expect(pages.map((p) => p.map((j) => [j.gateway.metadata.name, j.deployment?.metadata.name]))).toEqual([
      [['gw-0', 'sllbr-gw-0'], ['gw-1', 'sllbr-gw-1']],
      [['gw-2', 'sllbr-gw-2'], ['gw-3', 'sllbr-gw-3']],
    ]);
    // Two pages of the four cover a/sllbr-gw-3; namespace b's are never asked for.
    expect(asked).toBe(2);
  });

  it('holds one page of Gateways at a time: the next page is asked for only after the previous one is planned', async () => {
    const names = Array.from({ length: 10 }, (_, i) => `gw-${i}`);
    const events: string[] = [];
    async function* gatewayPages(): AsyncGenerator<Gateway[], void, undefined> {
      for (let i = 0; i < names.length; i += 3) {
        events.push(`gateways ${i}`);
        yield names.slice(i, i + 3).map((n) => gatewayOf('a', n));
      }
    }
    const deployments = counted(names.map((n) => deploymentOf('a', `sllbr-${n}`)), 4);
    await joinPages(gatewayPages(), deployments.pages, async (joined) => {
      events.push(`planned ${joined.map((j) => j.gateway.metadata.name).join(',')}`);
    });
    expect(events).toEqual(['gateways 0', 'planned gw-0,gw-1,gw-2', 'gateways 3', 'planned gw-3,gw-4,gw-5', 'gateways 6', 'planned gw-6,gw-7,gw-8', 'gateways 9', 'planned gw-9']);
    expect(deployments.asked()).toBe(3);
  });
});
