import { AppsV1Api } from '@kubernetes/client-node';
import type { Handled } from '../../functions/handle-event.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig } from './cluster.js';

/**
 * Resync passes until one finds nothing drifted, taken only once the
 * deployment controller has observed every LB Deployment of `namespace`
 * **before** the pass. A Deployment's first status turns its Gateway's
 * LoadBalancerAvailable from Pending to a replica count, so a pass that ran
 * before that status would find nothing and the next one would (seen under
 * load).
 */
export async function convergeResync(pass: () => Promise<Handled>, namespace: string, timeoutMs: number): Promise<void> {
  const apps = adminConfig().makeApiClient(AppsV1Api);
  await waitFor('every LB Deployment observed, then a resync pass that finds nothing drifted', async () => {
    const lb = (await apps.listNamespacedDeployment({ namespace })).items;
    if (!lb.every((d) => d.status?.observedGeneration === d.metadata?.generation)) return undefined;
    const h = await pass();
    expect(h.next).toBe('settle');
    return h.outcome === 'no-gateway-affected' ? true : undefined;
  }, { timeoutMs, intervalMs: 200 });
}
