// Gateways joined with their LB Deployments a page at a time (docs/design.md
// §11). Both lists come from the API server in key order, namespace then
// name, and the LB Deployment of Gateway `gw` is `sllbr-gw` in the same
// namespace: the two lists advance together, so a resync pass holds one page
// of Gateways and about one page of Deployments, whatever the number of
// Gateways. This is what keeps a pass inside the Service's memory limit.
//
// The order is what makes it cheap, not what makes it right: a Gateway whose
// Deployment the list did not give by the time the list passed its key is
// handed on without one, and the caller reads that Deployment by name before
// deciding anything (a Deployment that lost its label, a name collision, a
// name cut and hashed for length, an order other than the expected one).
import { deploymentName } from '../reconcile/plan/names.js';
import type { Deployment, Gateway } from '../../api/schemas.js';
import { objectKey } from './resync-plan.js';

/** A Gateway and its LB Deployment as the list gave it; undefined: the list did not give it. */
export interface Joined {
  gateway: Gateway;
  deployment: Deployment | undefined;
}

/** Where sllbr-<gateway> sits in the Deployments' list ("namespace/name"). */
export function deploymentKey(gateway: Gateway): string {
  return objectKey(gateway.metadata.namespace, deploymentName(gateway.metadata.name));
}

function keyOfDeployment(deployment: Deployment): string {
  return objectKey(deployment.metadata.namespace, deployment.metadata.name);
}

/**
 * Walks `gatewayPages` and `deploymentPages` side by side and hands each page
 * of Gateways, joined, to `onPage`, awaited before the next page is asked
 * for. A page of Deployments is asked for only while a Gateway of the current
 * page waits for a key the Deployments' list has not reached; once the
 * Gateways are done, no more Deployments are asked for.
 */
export async function joinPages(
  gatewayPages: AsyncIterable<Gateway[]>,
  deploymentPages: AsyncIterator<Deployment[], void, undefined>,
  onPage: (joined: Joined[]) => Promise<void>,
): Promise<void> {
  // Deployments listed ahead of their Gateway's page (their key is beyond it).
  let ahead = new Map<string, Deployment>();
  // The largest Deployment key listed so far.
  let reached = '';
  let exhausted = false;
  try {
    for await (const gateways of gatewayPages) {
      const joined: Joined[] = [];
      const waiting = new Map<string, Joined>();
      let frontier = '';
      let furthestWaiting = '';
      for (const gateway of gateways) {
        const key = deploymentKey(gateway);
        const j: Joined = { gateway, deployment: ahead.get(key) };
        joined.push(j);
        if (key > frontier) frontier = key;
        if (j.deployment !== undefined) ahead.delete(key);
        else if (!exhausted && key > reached) {
          waiting.set(key, j);
          if (key > furthestWaiting) furthestWaiting = key;
        }
      }
      while (!exhausted && reached < furthestWaiting) {
        const next = await deploymentPages.next();
        if (next.done === true) {
          exhausted = true;
          break;
        }
        for (const deployment of next.value) {
          const key = keyOfDeployment(deployment);
          if (key > reached) reached = key;
          const j = waiting.get(key);
          if (j !== undefined) {
            j.deployment = deployment;
            waiting.delete(key);
          } else if (key > frontier) ahead.set(key, deployment);
        }
      }
      // What is at or before this page's last key can belong to no later page.
      if (ahead.size > 0) ahead = new Map([...ahead].filter(([key]) => key > frontier));
      await onPage(joined);
    }
  } finally {
    await deploymentPages.return?.();
  }
}

/** An array in key order, cut into pages: the same walk for Gateways already in memory. */
export async function* pagesOfArray<T>(items: readonly T[], pageSize: number): AsyncGenerator<T[], void, undefined> {
  for (let i = 0; i < items.length; i += pageSize) yield items.slice(i, i + pageSize);
}

/** No pages at all. */
export async function* noPages<T>(): AsyncGenerator<T[], void, undefined> {
  return;
}
