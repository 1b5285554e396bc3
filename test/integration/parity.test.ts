// The Meridio-2 parity table on the real API server, reconciled as the
// controller's ServiceAccount under the shipped ClusterRole.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { GATEWAYS } from '../../functions/kube/kube-api.js';
import { reconcile } from '../../functions/reconcile/reconcile.js';
import { checkCase } from '../parity/check-case.js';
import { BASE_CONFIGURATION, CASES, templateFor } from '../parity/meridio2-cases.js';
import { adminConfig } from '../support/cluster.js';
import { createConfiguration, gatewayBody, readGateway } from '../support/fixtures.js';
import { useWorld } from '../support/world.js';

describe('Meridio-2 parity (real API server)', () => {
  const w = useWorld('parity');

  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const ns = w.ns();
    const r = w.r();
    await createConfiguration(ns, 'cfg', { ...BASE_CONFIGURATION, ...c.configuration });
    await adminConfig().makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...GATEWAYS,
      namespace: ns,
      body: gatewayBody('gw', w.cls(), c.noParametersRef ? undefined : 'cfg'),
    });
    await reconcile(w.key(), { ...r.deps, template: templateFor(c) });
    const raw = adminConfig().makeApiClient(CustomObjectsApi);
    const got = await raw.getNamespacedCustomObject({ group: 'apps', version: 'v1', plural: 'deployments', namespace: ns, name: 'sllbr-gw' }).catch(() => null);
    if (c.fields && c.fields.length > 0) expect(got).not.toBeNull();
    checkCase(c, 'gw', got, (await readGateway(ns, 'gw')).status?.conditions ?? []);
  });
});
