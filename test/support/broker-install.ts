import { CustomObjectsApi } from '@kubernetes/client-node';
import { z } from 'zod';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig } from './cluster.js';
import { applyManifest, buildInstall, objectManifest } from './install.js';

// Installs the shipped event wiring of infra/knative/ (Broker, Triggers,
// ApiServerSource, PingSource and the Knative Service they point at) into a
// test namespace, rendered by the pinned kustomize from `infra/` or from an
// overlay of it (test/e2e/overlays/*), exactly as an operator would.
//
// Two things a cluster does are done here instead:
// - The namespace: every test has its own, set on each object the way
//   kustomize's `namespace:` field would (the objects' references carry no
//   namespace, so they follow).
// - The Knative Eventing webhook's defaults (applyWebhookDefaults): this
//   suite does not run the webhook, so the defaults the reconcilers depend on
//   are written by one function, each documented against upstream.

export const BROKER = 'meridio-2-gateway-events';
export const SERVICE = 'meridio-2-gateway-controller';
// The ConfigMap is the LB template the Service mounts: Serving and a kubelet read it.
const KINDS = new Set(['Broker', 'Trigger', 'ApiServerSource', 'PingSource', 'Service', 'ConfigMap', 'ContainerSource', 'EventPolicy', 'SinkBinding']);
/** Applied only with Eventing's OIDC on: without it an EventPolicy is never Ready, and with it the Broker is not either. */
const OIDC_ONLY = new Set(['EventPolicy', 'SinkBinding']);
const BROKER_CLASS_ANNOTATION = 'eventing.knative.dev/broker.class';
const BROKER_LABEL = 'eventing.knative.dev/broker';

type Obj = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: Record<string, unknown> };

interface Ref { namespace?: string }
interface Destination { ref?: Ref }
interface PolicyFrom { ref?: Ref }
interface Delivery { deadLetterSink?: Destination }

function defaultDestination(d: Destination | undefined, ns: string): void {
  // Destination.SetDefaults: a ref without a namespace means the parent's.
  if (d?.ref && !d.ref.namespace) d.ref.namespace = ns;
}

/**
 * What knative.dev/eventing v0.50.0's webhook would write on create
 * (pkg/apis/eventing/v1 broker_defaults.go and trigger_defaults.go, with the
 * shipped config-br-defaults):
 * - Broker: the class annotation (DefaultBrokerClassIfUnset; without it the
 *   MT Broker reconciler ignores the Broker), `spec.config` from
 *   config-br-defaults' clusterDefault (the ConfigMap naming the channel
 *   template), and the namespace of the dead-letter sink ref.
 * - Trigger: the `eventing.knative.dev/broker` label (the filter and the
 *   Broker reconciler select Triggers by it), and the namespaces of the
 *   subscriber and dead-letter sink refs.
 * - EventPolicy: the namespace of each `from` ref (the policy's own;
 *   eventpolicy_defaults.go in pkg/apis/eventing/v1alpha1).
 * ApiServerSource and PingSource need none (PingSource's only default is a
 * schedule, which ours has; its reconciler defaults the sink namespace
 * itself). The Knative Service's defaults belong to Serving, which is not
 * run: only its status address is read (setServiceAddress).
 * SinkBinding (K_SINK for the function) needs the webhook; the function
 * process gets K_SINK = the Broker's address directly, the value the
 * SinkBinding would inject.
 */
export function applyWebhookDefaults(obj: Obj, ns: string): Obj {
  const o = structuredClone(obj);
  const spec = (o.spec ?? {}) as Record<string, unknown> & { delivery?: Delivery; subscriber?: Destination; broker?: string; config?: unknown; from?: PolicyFrom[] };
  if (o.kind === 'Broker') {
    o.metadata.annotations = { [BROKER_CLASS_ANNOTATION]: 'MTChannelBasedBroker', ...o.metadata.annotations };
    spec.config ??= { apiVersion: 'v1', kind: 'ConfigMap', name: 'config-br-default-channel', namespace: 'knative-eventing' };
    defaultDestination(spec.delivery?.deadLetterSink, ns);
  }
  if (o.kind === 'Trigger') {
    if (spec.broker) o.metadata.labels = { ...o.metadata.labels, [BROKER_LABEL]: spec.broker };
    defaultDestination(spec.subscriber, ns);
    defaultDestination(spec.delivery?.deadLetterSink, ns);
  }
  if (o.kind === 'EventPolicy') for (const from of spec.from ?? []) defaultDestination(from, ns);
  // A ConfigMap has no spec, and must not get one.
  if (obj.spec !== undefined) o.spec = spec;
  return o;
}

/** The shipped objects of one kind, rendered from `dir` (infra/ or an overlay of it). */
export async function renderEventWiring(dir: string): Promise<Obj[]> {
  const all = await buildInstall(dir);
  return all.map((m) => m.object as unknown as Obj).filter((o) => KINDS.has(o.kind) && (o.kind !== 'Service' || o.apiVersion.startsWith('serving.knative.dev/')));
}

const apply = (obj: Obj): Promise<void> => applyManifest(objectManifest(obj as unknown as Record<string, unknown>));

const AddressSchema = z.object({ name: z.string().optional(), url: z.string().url(), audience: z.string().optional(), CACerts: z.string().optional() });
const AddressedSchema = z.object({ status: z.object({ address: AddressSchema, addresses: z.array(AddressSchema).optional() }) });
const SubscriberSchema = z.object({ status: z.object({ subscriberUri: z.string().url() }) });

export interface EventWiring {
  objects: Obj[];
  /** The Broker's status.address.url: what a SinkBinding injects as K_SINK. */
  brokerUrl: string;
  /** The Broker's status.address.audience: set only with Eventing's OIDC on. */
  brokerAudience?: string;
  /**
   * The Broker's https address and its CA (status.addresses, name https):
   * set only with Eventing's transport encryption on. What a SinkBinding
   * injects as K_SINK and K_CA_CERTS under strict transport encryption.
   */
  brokerHttps?: { url: string; caCerts: string };
}

/**
 * Applies the LB template ConfigMap and the Knative Service (with its status
 * address pointing at `functionUrl`, as Serving would point it at the
 * Revision; or, with `functionUrl` null, as the real Serving sets it), then
 * the Broker, Triggers, ApiServerSource and PingSource from `dir` (with
 * `oidc`, the EventPolicy and the SinkBinding too), and waits until the
 * Broker has an address and every Trigger a subscriber URI. The
 * ContainerSource (gateway-watch) is returned, not applied: Eventing's
 * ContainerSource reconciler is not run, its adapter runs as a process.
 */
export async function installEventWiring(ns: string, dir: string, functionUrl: string | null, opts: { oidc?: boolean; transportEncryption?: boolean; afterApply?: (wiring: EventWiring) => Promise<void> } = {}): Promise<EventWiring> {
  const rendered = (await renderEventWiring(dir)).filter((o) => opts.oidc || !OIDC_ONLY.has(o.kind));
  const objects = rendered.map((o) => applyWebhookDefaults({ ...o, metadata: { ...o.metadata, namespace: ns } }, ns));
  const service = objects.find((o) => o.kind === 'Service');
  if (!service) throw new Error(`no Knative Service rendered from ${dir}`);
  for (const o of objects.filter((x) => x.kind === 'ConfigMap')) await apply(o);
  await apply(service);
  const api = adminConfig().makeApiClient(CustomObjectsApi);
  if (functionUrl !== null) await setServiceAddress(ns, service.metadata.name, functionUrl);
  else {
    await waitFor(`Knative Service ${ns}/${service.metadata.name} status.address (from Serving)`, async () => {
      const s = await api.getNamespacedCustomObject({ group: 'serving.knative.dev', version: 'v1', namespace: ns, plural: 'services', name: service.metadata.name });
      return AddressedSchema.safeParse(s).success ? true : undefined;
    }, { timeoutMs: 180000, intervalMs: 250 });
  }
  const isSource = (o: Obj): boolean => o.kind === 'ApiServerSource' || o.kind === 'PingSource';
  for (const o of objects.filter((x) => x.kind !== 'Service' && x.kind !== 'ConfigMap' && x.kind !== 'ContainerSource' && !isSource(x))) await apply(o);
  const broker = objects.find((o) => o.kind === 'Broker');
  if (!broker) throw new Error(`no Broker rendered from ${dir}`);
  const brokerAddress = await waitFor(`Broker ${ns}/${broker.metadata.name} status.address`, async () => {
    const b = await api.getNamespacedCustomObject({ group: 'eventing.knative.dev', version: 'v1', namespace: ns, plural: 'brokers', name: broker.metadata.name });
    const r = AddressedSchema.safeParse(b);
    if (!r.success) return undefined;
    const https = r.data.status.addresses?.find((a) => a.url.startsWith('https:'));
    // With transport encryption the https address comes with the http one.
    if (opts.transportEncryption && !https?.CACerts) return undefined;
    return { ...r.data.status.address, ...(https?.CACerts ? { https: { url: https.url, caCerts: https.CACerts } } : {}) };
  }, { timeoutMs: 90000, intervalMs: 250 });
  // The sources once their sink has an address: a PingSource reconciled
  // before that stays SinkNotFound here (seen with these reconcilers: the
  // Broker's later address did not bring it back).
  for (const o of objects.filter(isSource)) await apply(o);
  const wiring: EventWiring = { objects, brokerUrl: brokerAddress.url, ...(brokerAddress.audience ? { brokerAudience: brokerAddress.audience } : {}), ...(brokerAddress.https ? { brokerHttps: brokerAddress.https } : {}) };
  // What reconcilers not run here would report for the applied objects
  // (with OIDC, the sources' identities): the Broker, and so its Triggers,
  // may wait for it.
  await opts.afterApply?.(wiring);
  for (const t of objects.filter((o) => o.kind === 'Trigger')) {
    await waitFor(`Trigger ${ns}/${t.metadata.name} status.subscriberUri`, async () => {
      const live = await api.getNamespacedCustomObject({ group: 'eventing.knative.dev', version: 'v1', namespace: ns, plural: 'triggers', name: t.metadata.name });
      return SubscriberSchema.safeParse(live).success ? true : undefined;
    }, { timeoutMs: 90000, intervalMs: 250 });
  }
  return wiring;
}

/** What Knative Serving reports for a ready Service: its address (here, the function process). */
export async function setServiceAddress(ns: string, name: string, url: string): Promise<void> {
  const api = adminConfig().makeApiClient(CustomObjectsApi);
  const live = await api.getNamespacedCustomObject({ group: 'serving.knative.dev', version: 'v1', namespace: ns, plural: 'services', name }) as { metadata: { generation?: number } };
  const status = {
    observedGeneration: live.metadata.generation ?? 1,
    url,
    address: { url },
    conditions: ['Ready', 'ConfigurationsReady', 'RoutesReady'].map((type) => ({ type, status: 'True', lastTransitionTime: new Date().toISOString() })),
  };
  await api.patchNamespacedCustomObjectStatus({ group: 'serving.knative.dev', version: 'v1', namespace: ns, plural: 'services', name, body: [{ op: 'add', path: '/status', value: status }] });
}
