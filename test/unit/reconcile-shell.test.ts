// The reconcile shell (observe → plan → write → re-plan → status) driven
// through a sequence no real API server produces on demand: a 503 on the
// Deployment write, then a 409 on the status write, then success. This is the
// project's only stub of KubeApi; everything the API server decides is tested
// against the real one (test/integration).
import { ApiException } from '@kubernetes/client-node';
import type { KubeApi } from '../../functions/kube/kube-api.js';
import { CONDITION_APPLIED } from '../../api/names.js';
import { reconcile, type ReconcileDeps } from '../../functions/reconcile/reconcile.js';
import type { Deployment, Gateway } from '../../api/schemas.js';
import { CONTROLLER, GW, LB_SERVICE_ACCOUNT, NS, TEMPLATE_HASH, gateway, gatewayClass, gatewayConfiguration, observed, simulateServer, templateDeployment, plan } from './reconcile-fixtures.js';

type Failing = 'replaceDeployment' | 'replaceGatewayStatus';

function apiError(code: number): ApiException<string> {
  return new ApiException(code, `HTTP ${code}`, JSON.stringify({ kind: 'Status', code, message: `injected ${code}` }), {});
}

/** One Gateway's world in memory, with scripted failures per write method. */
function stubApi(initial: { gateway: Gateway; deployment: Deployment | null; configurationGenerations?: number[] }, script: Partial<Record<Failing, number[]>>) {
  // The configuration's generation per read (the last one repeats): a read
  // that is behind another writer's update, then one that is not.
  const generations = [...(initial.configurationGenerations ?? [2])];
  const nextGeneration = (): number => (generations.length > 1 ? (generations.shift() as number) : (generations[0] as number));
  let gw = initial.gateway;
  let deployment = initial.deployment;
  let rv = 2000;
  const calls: string[] = [];
  const fail = (method: Failing): void => {
    const code = script[method]?.shift();
    if (code !== undefined) {
      calls.push(`${method}:${code}`);
      throw apiError(code);
    }
    calls.push(`${method}:ok`);
  };
  const notExpected = async (): Promise<never> => {
    throw new Error('not expected in this scenario');
  };
  const api: KubeApi = {
    getGateway: async () => structuredClone(gw),
    getGatewayClass: async () => gatewayClass(),
    getGatewayConfiguration: async () => {
      calls.push('getGatewayConfiguration');
      return gatewayConfiguration({}, { generation: nextGeneration() });
    },
    getDeployment: async () => structuredClone(deployment),
    listL34Routes: async () => [],
    listNamespaces: async () => [],
    listGateways: async () => [structuredClone(gw)],
    listGatewayClasses: async () => [gatewayClass()],
    listPage: async () => {
      throw new Error('not expected in this scenario');
    },
    // The plugin's reads; a reconcile makes none.
    getObject: notExpected,
    getConfigMapData: notExpected,
    listObjectPage: notExpected,
    createDeployment: async () => {
      throw new Error('not expected in this scenario');
    },
    replaceDeployment: async (_ns, body) => {
      fail('replaceDeployment');
      deployment = simulateServer(body, deployment, String((rv += 1)));
      return structuredClone(deployment);
    },
    annotateDeployment: async () => {
      throw new Error('not expected in this scenario');
    },
    labelDeployment: async () => {
      throw new Error('not expected in this scenario');
    },
    getPodDisruptionBudget: async () => {
      throw new Error('not expected in this scenario');
    },
    createPodDisruptionBudget: async () => {
      throw new Error('not expected in this scenario');
    },
    replacePodDisruptionBudget: async () => {
      throw new Error('not expected in this scenario');
    },
    replaceGatewayStatus: async (body) => {
      fail('replaceGatewayStatus');
      gw = { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String((rv += 1)) } };
      return structuredClone(gw);
    },
    replaceGatewayClassStatus: async () => {
      throw new Error('not expected in this scenario');
    },
    getCrdMetadata: async () => null,
    createEvent: async () => ({}),
    getEvent: async () => null,
    replaceEvent: async () => ({}),
    withSignal: () => api,
  };
  return { api, calls, state: () => ({ gateway: gw, deployment }) };
}

function depsFor(api: KubeApi): ReconcileDeps {
  return {
    api,
    template: { deployment: templateDeployment(), hash: TEMPLATE_HASH },
    settings: { controllerName: CONTROLLER, lbServiceAccount: LB_SERVICE_ACCOUNT },
    clock: () => new Date('2025-01-01T00:00:00Z'),
    instance: 'unit',
  };
}

describe('reconcile shell: a fresh result per attempt', () => {
  // A Deployment applied from configuration generation 1; the configuration
  // is now at generation 2, so an update is due.
  const first = plan(observed());
  if (first.deployment.action !== 'create') throw new Error('fixture: expected a create');
  const applied = simulateServer(first.deployment.object, null, '1500');

  it('503 on the Deployment write, 409 on the status write, then success: applied, no retry', async () => {
    const world = stubApi({ gateway: gateway(), deployment: applied }, { replaceDeployment: [503], replaceGatewayStatus: [409] });
    const result = await reconcile({ namespace: NS, name: GW }, depsFor(world.api));
    expect(world.calls.filter((c) => c.startsWith('replace'))).toEqual(['replaceDeployment:503', 'replaceGatewayStatus:409', 'replaceDeployment:ok', 'replaceGatewayStatus:ok']);
    expect(result).toMatchObject({ outcome: 'applied', next: 'settle', deploymentWritten: true, statusWritten: true, attempts: 2 });
    expect(result.error).toBeUndefined();
    const conditions = world.state().gateway.status?.conditions ?? [];
    expect(conditions.find((c) => c.type === CONDITION_APPLIED)).toMatchObject({ status: 'True', reason: 'Applied' });
  });

  it('a 503 that is the last word still asks for redelivery', async () => {
    const world = stubApi({ gateway: gateway(), deployment: applied }, { replaceDeployment: [503] });
    const result = await reconcile({ namespace: NS, name: GW }, depsFor(world.api));
    expect(result).toMatchObject({ outcome: 'write-failed', next: 'redeliver', deploymentWritten: false, statusWritten: true, attempts: 1 });
    expect(result.error).toMatchObject({ class: 'transient', code: 503 });
  });
});

describe('reconcile shell: an observation behind the Deployment it read', () => {
  // The Deployment already records configuration generation 2 (another
  // replica wrote it); this reconcile's first read of the configuration was
  // taken before that update and says generation 1.
  const atTwo = plan(observed({ gatewayConfiguration: gatewayConfiguration({}, { generation: 2 }) }));
  if (atTwo.deployment.action !== 'create') throw new Error('fixture: expected a create');
  const recordsTwo = simulateServer(atTwo.deployment.object, null, '1500');

  it('observes again instead of rolling the Deployment back to generation 1', async () => {
    const world = stubApi({ gateway: gateway(), deployment: recordsTwo, configurationGenerations: [1, 2] }, {});
    const result = await reconcile({ namespace: NS, name: GW }, depsFor(world.api));
    expect(world.calls.filter((c) => c.startsWith('replaceDeployment'))).toEqual([]);
    expect(world.calls.filter((c) => c === 'getGatewayConfiguration')).toHaveLength(2);
    expect(result).toMatchObject({ deploymentWritten: false, attempts: 2 });
    const applied = (world.state().gateway.status?.conditions ?? []).find((c) => c.type === CONDITION_APPLIED);
    expect(applied?.status).toBe('True');
    expect(applied?.message).toContain('generation 2');
  });

  it('a read that stays behind is delivered again, never written from', async () => {
    const world = stubApi({ gateway: gateway(), deployment: recordsTwo, configurationGenerations: [1] }, {});
    const result = await reconcile({ namespace: NS, name: GW }, depsFor(world.api));
    expect(world.calls.filter((c) => c.startsWith('replace'))).toEqual([]);
    expect(result).toMatchObject({ outcome: 'error', next: 'redeliver', deploymentWritten: false, statusWritten: false, attempts: 5 });
  });
});
