import { WATCHED_RESOURCES } from '../../api/watched-resources.js';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { deniedByAuthorizer, readEvents, resourceOf, type AuditEvent } from '../../tools/controlplane/audit-log.js';
import { freezeDeployments } from '../support/policies.js';
import { pingEvent } from '../../events/outgoing.js';
import { LABEL_MANAGED_BY as MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../api/names.js';
import { GATEWAY_CONFIGURATIONS, L34ROUTES } from '../../functions/kube/kube-api.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, clusterInfo, useNamespace } from '../support/cluster.js';
import { ADAPTER_SA, adapterIdentity, shippedSourceRole } from '../support/adapter-identity.js';
import { APPLIED, condition, configurationSpec, createClass, createConfiguration, createGateway, editSpec, readGateway } from '../support/fixtures.js';
import { programmedAndApplied as programmedAndAppliedIn } from '../support/fixtures.js';
import { startFunctionProcess, type FunctionProcess, type StartOptions } from '../../tools/harness/function-process.js';
import { startAdapter, type AdapterProcess } from '../support/adapter-process.js';
import { controllerIdentity } from '../support/reconciler.js';
import { stableAddress, type StableAddress } from '../support/stable-address.js';

// The whole event path with real parts: kube-apiserver → the Knative
// ApiServerSource receive adapter (built from knative.dev/eventing) → the
// compiled function server → reconcile → the API server. K_SINK points the
// function's fan-out back at itself, a valid Knative wiring without a Broker.

const ADAPTER_RESOURCES = Object.values(WATCHED_RESOURCES).map(({ group, version, plural, kind }) => ({
  group,
  version,
  resource: plural,
  ...(kind === 'Deployment' ? { selector: `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}` } : {}),
}));

describe('end to end with the real ApiServerSource adapter', () => {
  const ns = useNamespace('e2e');
  let fn: FunctionProcess | undefined;
  let front: StableAddress | undefined;
  let adapter: AdapterProcess | undefined;
  let fnOptions: StartOptions;
  let cls: string;

  beforeEach(async () => {
    const controller = await controllerIdentity(ns());
    cls = `meridio-${ns()}`;
    await createClass(cls);
    fnOptions = { kubeconfig: controller.kubeconfig, namespaces: [ns()] };
    fn = await startFunctionProcess(fnOptions);
    front = await stableAddress(fn.port);
    adapter = await startAdapter({ kubeconfig: await adapterIdentity(ns()), sink: `${front.url}/`, namespaces: [ns()], resources: ADAPTER_RESOURCES });
    // The adapter sends nothing for what exists when it starts, and its
    // watches open asynchronously: touch a probe object until its event
    // reaches the function.
    await createConfiguration(ns(), 'probe', configurationSpec());
    let n = 0;
    await waitFor('the adapter to deliver events', async () => {
      await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'probe', (s) => ({ ...s, horizontalScaling: { replicas: 1 + (++n % 5), enforceReplicas: true } }));
      return fn!.logs.some((l) => typeof l.subject === 'string' && l.subject.endsWith('/gatewayconfigurations/probe')) ? true : undefined;
    }, { timeoutMs: 30000, intervalMs: 500 });
  });

  afterEach(async () => {
    await adapter?.stop();
    await front?.close();
    await fn?.stop();
  });

  const programmedAndApplied = (gw: string, generation?: string): (() => Promise<true | undefined>) => programmedAndAppliedIn(ns(), gw, generation);

  it('a Gateway and its GatewayConfiguration become Programmed and Applied', async () => {
    await createConfiguration(ns(), 'cfg');
    await createGateway(ns(), 'gw', cls, 'cfg');
    await waitFor('gw Programmed and Applied', programmedAndApplied('gw'), { timeoutMs: 30000 });
  });

  it('one GatewayConfiguration shared by 3 Gateways, edited once, re-applies all 3, each in its own invocation', async () => {
    await createConfiguration(ns(), 'shared');
    for (const g of ['a', 'b', 'c']) await createGateway(ns(), g, cls, 'shared');
    for (const g of ['a', 'b', 'c']) await waitFor(`${g} applied`, programmedAndApplied(g, '1'), { timeoutMs: 30000 });
    // A configuration event fans out only the Gateways still behind it
    // (docs/design.md §11): let the new Gateways' own events (status and
    // Deployment writes) drain first, so that the edit reaches all three.
    await fn!.quiet(2000);
    const mark = fn!.logs.length;
    await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'shared', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
    for (const g of ['a', 'b', 'c']) await waitFor(`${g} re-applied`, programmedAndApplied(g, '2'), { timeoutMs: 30000 });
    // The dispatch invocation logs once its fan-out posts are answered.
    const fanned = await waitFor('the dispatch log line', () => fn!.logs.slice(mark).find((l) => l.outcome === 'fanned-out' && typeof l.subject === 'string' && l.subject.endsWith('/gatewayconfigurations/shared')));
    expect(fanned.gateways).toBe(3);
    // One reconcile invocation per Gateway. Another event (a Deployment
    // status change, say) may have applied the edit first; that one then
    // finds the Gateway in sync, which is the point of reading fresh state.
    // An invocation logs after its status and Event writes, so the status
    // seen above can come before its log line: wait for the lines.
    const all = [`${ns()}/a`, `${ns()}/b`, `${ns()}/c`];
    const logged = (): { reconciled: string[]; applied: string[] } => {
      const after = fn!.logs.slice(mark);
      const reconciles = after.filter((l) => l.type === 'org.nordix.meridio2.gateway.reconcile' && (l.outcome === 'applied' || l.outcome === 'in-sync'));
      return {
        reconciled: [...new Set(reconciles.map((l) => String(l.gateway)))].sort(),
        applied: [...new Set(after.filter((l) => l.outcome === 'applied').map((l) => String(l.gateway)))].sort(),
      };
    };
    await waitFor('a reconcile invocation and an applied outcome logged for each Gateway', () => {
      const { reconciled, applied } = logged();
      return reconciled.length === 3 && applied.length === 3 ? true : undefined;
    }, { timeoutMs: 60000 });
    expect(logged()).toEqual({ reconciled: all, applied: all });
  });

  it('the seed scenario end to end: a denying policy gives Applied=False, and removing it recovers', async () => {
    await createConfiguration(ns(), 'cfg');
    await createGateway(ns(), 'gw', cls, 'cfg');
    await waitFor('gw applied', programmedAndApplied('gw', '1'), { timeoutMs: 30000 });
    const freeze = await freezeDeployments(ns(), 'sllbr-gw', 'frozen for maintenance');
    try {
      await editSpec(GATEWAY_CONFIGURATIONS, ns(), 'cfg', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
      await waitFor('Applied=False/ApplyFailed', async () => {
        const g = await readGateway(ns(), 'gw');
        return condition(g, APPLIED)?.reason === 'ApplyFailed' && condition(g, APPLIED)?.message.includes('frozen for maintenance') ? g : undefined;
      }, { timeoutMs: 30000 }).then((g) => expect(condition(g, 'Programmed')?.status).toBe('True'));
    } finally {
      await freeze.lift();
    }
    // The source's retries are long spent; the periodic resync heals it.
    await waitFor('recovery after the policy is removed', async () => {
      expect((await fn!.post(pingEvent())).status).toBeLessThan(300);
      return (await programmedAndApplied('gw', '2')()) ?? undefined;
    }, { timeoutMs: 30000, intervalMs: 500 });
  });

  it('kill -9 of the function mid-stream, restart, resync: everything converges', async () => {
    await createConfiguration(ns(), 'cfg');
    const names = ['k1', 'k2', 'k3', 'k4'];
    // Events in flight when the process dies are lost to it.
    const creating = (async () => { for (const g of names) await createGateway(ns(), g, cls, 'cfg'); })();
    await fn!.kill9();
    await creating;
    await createConfiguration(ns(), 'cfg2');
    await adminConfig().makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ ...L34ROUTES, namespace: ns(), body: { apiVersion: 'meridio-2.nordix.org/v1alpha1', kind: 'L34Route', metadata: { name: 'r' }, spec: { parentRefs: [{ name: 'k1' }], destinationCIDRs: ['20.0.0.9/32'], protocols: ['TCP'], priority: 1 } } });
    // A new port behind the same address, as a new Pod behind the Service.
    const dead = fn!.port;
    fn = await startFunctionProcess(fnOptions);
    expect(fn.port).not.toBe(dead);
    front!.retarget(fn.port);
    expect((await fn.post(pingEvent())).status).toBeLessThan(300);
    for (const g of names) await waitFor(`${g} converged`, programmedAndApplied(g), { timeoutMs: 30000 });
    expect((await readGateway(ns(), 'k1')).status?.addresses).toEqual([{ type: 'IPAddress', value: '20.0.0.9' }]);
  });

  it('the ApiServerSource ClusterRole grants what the adapter used, and the adapter used every resource it names', async () => {
    // Watches are audited when they end: stop the adapter first.
    await adapter!.stop();
    // Only this test's adapter: the audit log spans every suite of the run,
    // and with Eventing's OIDC on (broker-oidc.test.ts) an adapter also
    // creates tokens, under the Role Knative's reconciler grants it there.
    const user = `system:serviceaccount:${ns()}:${ADAPTER_SA}`;
    const needed = ADAPTER_RESOURCES.map((r) => `${r.group} ${r.resource} watch`);
    const usedIn = (events: AuditEvent[]): Set<string> => new Set(events.map((e) => `${e.objectRef?.apiGroup ?? ''} ${resourceOf(e)} ${e.verb}`));
    const read = (): AuditEvent[] => readEvents(clusterInfo().auditLog).events.filter((e) => e.user.username === user && e.objectRef?.resource);
    // The API server logs a watch once it has seen its connection close,
    // which may be after the adapter has exited: wait for them (the
    // assertions below say what is missing if they never come).
    await waitFor("the adapter's ended watches in the audit log", () => (needed.every((n) => usedIn(read()).has(n)) ? true : undefined), { timeoutMs: 30_000, intervalMs: 250 }).catch(() => undefined);
    const mine = read();
    expect(mine.filter(deniedByAuthorizer).map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    const used = usedIn(mine);
    const granted = new Set<string>();
    for (const rule of shippedSourceRole().rules ?? []) {
      for (const g of rule.apiGroups ?? []) for (const r of rule.resources ?? []) for (const v of rule.verbs) granted.add(`${g} ${r} ${v}`);
    }
    expect([...used].filter((u) => !granted.has(u))).toEqual([]);
    // The adapter watches each of the five resources; on a 1.36 API server it
    // uses a streaming watch (sendInitialEvents) instead of list + watch.
    // "list" stays granted for API servers without that, and "get" plus the
    // misspelt "gatewaies" serve only the Eventing controller's permission
    // check (see the comment in the role), which has no part in this test.
    expect(needed.filter((n) => !used.has(n))).toEqual([]);
    expect([...granted].filter((g) => !used.has(g) && !/ (get|list)$/.test(g) && !g.includes('gatewaies'))).toEqual([]);
  });
});

