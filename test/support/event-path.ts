import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { z } from 'zod';
import { RECONCILE_TYPE } from '../../events/types.js';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { startFunctionProcess, type FunctionProcess, type LogLine, type StartOptions } from '../../tools/harness/function-process.js';
import { ADAPTER_SA, adapterIdentity } from './adapter-identity.js';
import { startAdapter, type AdapterProcess, type AdapterResource } from './adapter-process.js';
import { installEventWiring, type EventWiring } from './broker-install.js';
import { adminConfig } from './cluster.js';
import { deleteAfterTest } from './cluster-scoped.js';
import { startEventing, type EventingPlane } from './eventing.js';
import type { Issuer } from './cert-issuer.js';
import { LB_AVAILABLE, condition, configurationSpec, createClass, createConfiguration, createGateway, editSpec, programmedAndApplied, readGateway } from './fixtures.js';
import { pluralOf } from './install.js';
import { childName, oidcServiceAccountName } from './knative-names.js';
import { controllerIdentity } from './reconciler.js';
import { FUNCTION_AUDIENCE, mintToken } from './sender-tokens.js';
import { stableAddress, type StableAddress } from './stable-address.js';

// The whole event path of the end-to-end Broker tests: the shipped event
// wiring (infra/ or an overlay of it) installed in the test namespace, the
// function process behind a stable address (the Knative Service's), with
// K_SINK = the Broker, and the ApiServerSource receive adapter sending to the
// Broker.
//
// On a data plane with Eventing's OIDC on (startEventing({ oidc: true })),
// every hop authenticates, and the function runs with SENDER_AUTH=required,
// admitting the Triggers' OIDC identities as Eventing created them. Two
// things a cluster does are done here, the way Eventing would do them:
// - The SinkBinding mounts an OIDC token for the Broker's audience into the
//   function's Pod (the SinkBinding needs Eventing's webhook, not run here):
//   the path mints that token with TokenRequest for the SinkBinding's OIDC
//   ServiceAccount and writes it to SINK_OIDC_TOKEN_FILE.
// - The ApiServerSource reconciler (not run here; the adapter runs as a
//   process) creates the source's OIDC ServiceAccount, names it in the
//   source's status.auth, lets the adapter's ServiceAccount request tokens
//   for it, and sets K_AUDIENCE and K_OIDC_SERVICE_ACCOUNT on the adapter:
//   sourceIdentities below, after pkg/reconciler/apiserversource
//   (resources/oidc_rolebinding.go, resources/receive_adapter.go). The
//   SinkBinding reconciler (not run either) names its OIDC ServiceAccount in
//   the SinkBinding's status.auth. The shipped EventPolicy resolves its
//   senders from these.

export interface EventPath {
  ns: string;
  cls: string;
  fn: FunctionProcess;
  fnOptions: StartOptions;
  wiring: EventWiring;
  adapter?: AdapterProcess;
  /** The function's address as the Triggers know it (a Service in front of its Pod). */
  front: StableAddress;
  /** With OIDC: each Trigger's OIDC identity (status.auth.serviceAccountName), by Trigger name. */
  triggerIdentities: Map<string, string>;
}

/**
 * The receive adapter's resources, from the applied ApiServerSource. Knative
 * Eventing v1.23 guesses resource names from kinds and gets Gateway wrong
 * (docs/operations.md); by default the names here come from discovery, which
 * is what the shipped gateway-watch component restores for Gateways.
 * `resourceOf` names them otherwise (Knative's guess, for a test of that).
 */
export async function adapterResources(wiring: EventWiring, resourceOf: (apiVersion: string, kind: string) => string | Promise<string> = pluralOf): Promise<AdapterResource[]> {
  const src = wiring.objects.find((o) => o.kind === 'ApiServerSource');
  const resources = (src?.spec as { resources?: Array<{ apiVersion: string; kind: string; selector?: { matchLabels?: Record<string, string> } }> } | undefined)?.resources;
  if (!resources) throw new Error('no ApiServerSource resources rendered');
  const out: AdapterResource[] = [];
  for (const r of resources) {
    const [group, version] = r.apiVersion.includes('/') ? (r.apiVersion.split('/') as [string, string]) : ['', r.apiVersion];
    const labels = Object.entries(r.selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
    out.push({ group, version, resource: await resourceOf(r.apiVersion, r.kind), ...(labels ? { selector: labels } : {}) });
  }
  return out;
}

const TriggerAuthSchema = z.object({ status: z.object({ auth: z.object({ serviceAccountName: z.string().min(1) }) }) });

/** Each Trigger's OIDC ServiceAccount, once the Trigger reconciler has created it. */
async function triggerIdentities(ns: string, wiring: EventWiring): Promise<Map<string, string>> {
  const api = adminConfig().makeApiClient(CustomObjectsApi);
  const out = new Map<string, string>();
  for (const t of wiring.objects.filter((o) => o.kind === 'Trigger')) {
    const sa = await waitFor(`Trigger ${ns}/${t.metadata.name} status.auth.serviceAccountName`, async () => {
      const r = TriggerAuthSchema.safeParse(await api.getNamespacedCustomObject({ group: 'eventing.knative.dev', version: 'v1', namespace: ns, plural: 'triggers', name: t.metadata.name }));
      return r.success ? r.data.status.auth.serviceAccountName : undefined;
    }, { timeoutMs: 60000, intervalMs: 250 });
    out.set(t.metadata.name, sa);
  }
  return out;
}

const SINK_BINDING = 'meridio-2-gateway-controller';

/** What a reconciler reports: its OIDC ServiceAccount in status.auth (the whole status: nothing else writes it here). */
async function setAuthStatus(ns: string, group: string, plural: string, name: string, serviceAccountName: string): Promise<void> {
  await adminConfig().makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus({ group, version: 'v1', namespace: ns, plural, name, body: [{ op: 'add', path: '/status', value: { auth: { serviceAccountName } } }] });
}

/**
 * What the ApiServerSource and SinkBinding reconcilers set up with OIDC on:
 * their OIDC ServiceAccounts, named in their status, and the adapter's right
 * to request tokens of its own; the adapter's environment for it.
 */
async function sourceIdentities(ns: string, wiring: EventWiring): Promise<Record<string, string>> {
  const source = wiring.objects.find((o) => o.kind === 'ApiServerSource');
  if (!source || !wiring.brokerAudience) throw new Error('OIDC: no ApiServerSource rendered, or the Broker has no audience');
  const sa = oidcServiceAccountName('sources.knative.dev', 'ApiServerSource', source.metadata.name);
  await mintToken(ns, sa, [wiring.brokerAudience]);
  await setAuthStatus(ns, 'sources.knative.dev', 'apiserversources', source.metadata.name, sa);
  const rbac = adminConfig().makeApiClient(RbacAuthorizationV1Api);
  const name = childName(source.metadata.name, '-create-oidc-token');
  await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name }, rules: [{ apiGroups: [''], resources: ['serviceaccounts/token'], resourceNames: [sa], verbs: ['create'] }] } });
  await rbac.createNamespacedRoleBinding({ namespace: ns, body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects: [{ kind: 'ServiceAccount', namespace: ns, name: ADAPTER_SA }] } });
  const binding = oidcServiceAccountName('sources.knative.dev', 'SinkBinding', SINK_BINDING);
  await mintToken(ns, binding, [wiring.brokerAudience]);
  await setAuthStatus(ns, 'sources.knative.dev', 'sinkbindings', SINK_BINDING, binding);
  return { K_AUDIENCE: wiring.brokerAudience, K_OIDC_SERVICE_ACCOUNT: sa };
}

const BrokerPoliciesSchema = z.object({ status: z.object({ policies: z.array(z.object({ name: z.string() })) }) });

/** Until the Broker applies the shipped EventPolicy (Ready once its senders resolved). */
async function brokerPolicyApplied(ns: string, wiring: EventWiring): Promise<void> {
  const policy = wiring.objects.find((o) => o.kind === 'EventPolicy');
  const broker = wiring.objects.find((o) => o.kind === 'Broker');
  if (!policy || !broker) throw new Error('OIDC: no EventPolicy or Broker rendered');
  const api = adminConfig().makeApiClient(CustomObjectsApi);
  await waitFor(`Broker ${ns}/${broker.metadata.name} applying EventPolicy ${policy.metadata.name}`, async () => {
    const r = BrokerPoliciesSchema.safeParse(await api.getNamespacedCustomObject({ group: 'eventing.knative.dev', version: 'v1', namespace: ns, plural: 'brokers', name: broker.metadata.name }));
    return r.success && r.data.status.policies.some((x) => x.name === policy.metadata.name) ? true : undefined;
  }, { timeoutMs: 60000, intervalMs: 250 });
}

/** The token the SinkBinding would mount for the function: its OIDC identity's, for the Broker's audience. */
async function sinkBindingToken(ns: string, wiring: EventWiring): Promise<string> {
  if (!wiring.brokerAudience) throw new Error('OIDC: the Broker has no audience');
  const token = await mintToken(ns, oidcServiceAccountName('sources.knative.dev', 'SinkBinding', SINK_BINDING), [wiring.brokerAudience]);
  const dir = mkdtempSync(join(tmpdir(), 'sink-oidc-'));
  const file = join(dir, 'token');
  writeFileSync(file, token);
  deleteAfterTest(`the SinkBinding token file ${file}`, async () => rmSync(dir, { recursive: true, force: true }));
  return file;
}

export interface StartPathOptions {
  /** Start the ApiServerSource receive adapter (default true). */
  adapter?: boolean;
  /** With transport encryption: K_CA_CERTS other than the Broker's CA (a wrong one, for a test of that). */
  caCerts?: string;
}

/**
 * What the SinkBinding injects: the Broker's address as K_SINK, with its
 * cluster host name resolved to a local listener (cluster-dns-proxy.ts);
 * with transport encryption, its https address and CA (K_CA_CERTS), the
 * host resolved to the ingress's HTTPS listener.
 */
async function sinkBindingEnv(plane: EventingPlane, wiring: EventWiring, caCerts: string | undefined): Promise<{ sink: string; env: Record<string, string> }> {
  if (!plane.ingressHttps) return { sink: await plane.proxy.localAddress(wiring.brokerUrl), env: {} };
  if (!wiring.brokerHttps) throw new Error('transport encryption is on but the Broker has no https address');
  const url = new URL(wiring.brokerHttps.url);
  url.host = `127.0.0.1:${plane.ingressHttps.port}`;
  return { sink: url.toString(), env: { K_CA_CERTS: caCerts ?? wiring.brokerHttps.caCerts } };
}

/**
 * The function (K_SINK = the Broker) and the shipped wiring from `dir`; the
 * source adapter unless `adapter: false`, with its events seen reaching the
 * function before this returns.
 */
export async function startEventPath(plane: EventingPlane, ns: string, dir: string, opts: StartPathOptions = {}): Promise<EventPath> {
  const controller = await controllerIdentity(ns);
  const cls = `meridio-${ns}`;
  await createClass(cls);
  // Pointed at the function once it listens; a restart gets a port of its own.
  const front = await stableAddress(0);
  // Whatever was started is stopped again when starting fails half-way:
  // nothing else holds it, and an open listener keeps jest from exiting.
  let started: Pick<EventPath, 'fn' | 'adapter'> | undefined;
  try {
    let adapterEnv: Record<string, string> = {};
    // With OIDC the Broker is Ready only once the shipped EventPolicy is, which
    // needs the sources' identities.
    const afterApply = async (w: EventWiring): Promise<void> => {
      adapterEnv = await sourceIdentities(ns, w);
    };
    const wiring = await installEventWiring(ns, dir, front.url, { oidc: plane.oidc, transportEncryption: plane.ingressHttps !== undefined, ...(plane.oidc ? { afterApply } : {}) });
    const identities = plane.oidc ? await triggerIdentities(ns, wiring) : new Map<string, string>();
    if (plane.oidc) await brokerPolicyApplied(ns, wiring);
    const binding = await sinkBindingEnv(plane, wiring, opts.caCerts);
    const fnOptions: StartOptions = {
      kubeconfig: controller.kubeconfig,
      namespaces: [ns],
      sink: binding.sink,
      env: binding.env,
      ...(plane.oidc ? {
        env: {
          ...binding.env,
          SENDER_AUTH: 'required',
          SENDER_AUTH_AUDIENCE: FUNCTION_AUDIENCE,
          SENDER_AUTH_ALLOWED: [...identities.values()].map((sa) => `${ns}/${sa}`).join(','),
          SINK_OIDC_TOKEN_FILE: await sinkBindingToken(ns, wiring),
        },
      } : {}),
    };
    const fn = await startFunctionProcess(fnOptions);
    started = { fn };
    front.retarget(fn.port);
    const path: EventPath = { ns, cls, fn, fnOptions, wiring, front, triggerIdentities: identities };
    started = path;
    if (opts.adapter !== false) {
      const env = { ...plane.proxyEnv, ...adapterEnv };
      path.adapter = await startAdapter({ kubeconfig: await adapterIdentity(ns), sink: wiring.brokerUrl, namespaces: [ns], resources: await adapterResources(wiring), env });
      // Nothing is sent for what exists when the adapter starts, and its
      // watches open asynchronously: touch a probe object until its event
      // has come through the Broker to the function.
      await createConfiguration(ns, 'probe', configurationSpec());
      let n = 0;
      await waitFor('the adapter → Broker → function path', async () => {
        await editSpec(GATEWAY_CONFIGURATIONS, ns, 'probe', (s) => ({ ...s, horizontalScaling: { replicas: 1 + (++n % 5), enforceReplicas: true } }));
        return fn.logs.some((l) => typeof l.subject === 'string' && l.subject.endsWith('/gatewayconfigurations/probe')) ? true : undefined;
      }, { timeoutMs: 60000, intervalMs: 1000 });
    }
    return path;
  } catch (err) {
    await started?.adapter?.stop();
    await started?.fn.stop();
    await front.close();
    throw err;
  }
}

/** Stops what startEventPath started; with EVENTING_LOG_DIR set, keeps the function's and the adapter's output there first. */
export async function stopEventPath(path: EventPath | undefined): Promise<void> {
  if (!path) return;
  const dir = process.env.EVENTING_LOG_DIR;
  if (dir) {
    writeFileSync(join(dir, `function-${path.ns}.jsonl`), path.fn.logs.map((l) => JSON.stringify(l)).join('\n'));
    writeFileSync(join(dir, `adapter-${path.ns}.log`), path.adapter?.output() ?? '');
  }
  await path.adapter?.stop();
  await path.fn.stop();
  await path.front.close();
}

export interface FanOut {
  /** The 3 reconcile events' ids, as the function posted them to the Broker. */
  ids: Set<string>;
  /** Where the function's log stood before the edit. */
  mark: number;
}

const handled = (l: LogLine): boolean => l.msg === 'event handled';

/**
 * One GatewayConfiguration shared by 3 Gateways, edited once: the dispatch
 * fans out 3 reconcile events to the Broker, the reconcile Trigger
 * delivers each, and all 3 are re-applied. Throws when any step is not
 * seen within `timeoutMs`.
 */
export async function fanOutThroughBroker(plane: EventingPlane, path: EventPath, timeoutMs: number): Promise<FanOut> {
  const { fn, ns, cls } = path;
  await createConfiguration(ns, 'shared');
  for (const g of ['a', 'b', 'c']) await createGateway(ns, g, cls, 'shared');
  for (const g of ['a', 'b', 'c']) await waitFor(`${g} applied`, programmedAndApplied(ns, g, '1'), { timeoutMs: 60000 });
  // The configuration event fans out only the Gateways still behind it
  // (docs/design.md §11): a reconcile that some other event starts after
  // the edit (the deployment controller's status writes of the new
  // Deployments, our own status writes, still travelling through the
  // Broker) would apply it first. So wait until those writes are over (the
  // function has reported each Deployment's status; no Nodes here, so none
  // becomes available) and their events have drained.
  for (const g of ['a', 'b', 'c']) {
    await waitFor(`${g}'s Deployment status reported`, async () => (condition(await readGateway(ns, g), LB_AVAILABLE)?.status === 'False' ? true : undefined), { timeoutMs: 60000 });
  }
  await fn.quiet(2000);
  const mark = fn.logs.length;
  const proxyMark = plane.proxy.requests.length;
  await editSpec(GATEWAY_CONFIGURATIONS, ns, 'shared', (s) => ({ ...s, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
  const fanned = await waitFor('the dispatch log line', () => fn.logs.slice(mark).find((l) => l.outcome === 'fanned-out' && typeof l.subject === 'string' && l.subject.endsWith('/gatewayconfigurations/shared')), { timeoutMs });
  expect(fanned.gateways).toBe(3);
  // The Broker ingress accepted 3 reconcile events from the function...
  const posted = await waitFor('3 reconcile events at the Broker ingress', () => {
    const r = plane.proxy.requests.slice(proxyMark).filter((x) => x.host.startsWith('broker-ingress.') && x.ceType === RECONCILE_TYPE && x.status === 202);
    return r.length >= 3 ? r : undefined;
  }, { timeoutMs });
  const ids = new Set(posted.map((r) => r.ceId ?? ''));
  expect(ids.size).toBe(3);
  // ...and the reconcile Trigger delivered each of them to the function.
  await waitFor('each reconcile event handled by the function, through the reconcile Trigger', () => {
    const seen = new Set(fn.logs.slice(mark).filter((l) => handled(l) && l.type === RECONCILE_TYPE && ids.has(l.eventId ?? '')).map((l) => l.gateway));
    return seen.size === 3 ? true : undefined;
  }, { timeoutMs });
  const viaFilter = plane.proxy.requests.filter((r) => r.host.startsWith('broker-filter.') && r.path.startsWith(`/triggers/${ns}/meridio-2-reconcile/`) && ids.has(r.ceId ?? ''));
  expect(new Set(viaFilter.map((r) => r.ceId)).size).toBe(3);
  for (const g of ['a', 'b', 'c']) await waitFor(`${g} re-applied`, programmedAndApplied(ns, g, '2'), { timeoutMs });
  return { ids, mark };
}

export interface EventPaths {
  /** The data plane of this test file. */
  eventing(): EventingPlane;
  /** startEventPath on it, in `ns`; stopped after the test. */
  start(ns: string, dir: string, opts?: StartPathOptions): Promise<EventPath>;
  /** The current test's path. */
  current(): EventPath;
}

/** Starts the data plane for the test file (beforeAll; stopped in afterAll) and stops each test's event path after it. */
export function useEventPaths(opts: { oidc?: boolean; tls?: Issuer } = {}): EventPaths {
  let plane: EventingPlane | undefined;
  let path: EventPath | undefined;
  beforeAll(async () => {
    plane = await startEventing(opts);
  }, 30 * 60 * 1000);
  afterAll(async () => {
    await plane?.stop();
  }, 120000);
  afterEach(async () => {
    await stopEventPath(path);
    path = undefined;
  });
  const eventing = (): EventingPlane => {
    if (!plane) throw new Error('no data plane');
    return plane;
  };
  return {
    eventing,
    start: async (ns, dir, o) => {
      path = await startEventPath(eventing(), ns, dir, o);
      return path;
    },
    current: () => {
      if (!path) throw new Error('no event path');
      return path;
    },
  };
}
