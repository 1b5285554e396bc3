import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { z } from 'zod';
import { GATEWAY_CONFIGURATIONS } from '../../functions/kube/kube-api.js';
import type { ControlPlane } from '../../tools/controlplane/control-plane.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { readEvents, resourceOf } from '../../tools/controlplane/audit-log.js';
import { adapterIdentity } from '../support/adapter-identity.js';
import type { AdapterProcess } from '../support/adapter-process.js';
import { installEventWiring, SERVICE, type EventWiring } from '../support/broker-install.js';
import { adminConfig, createNamespace } from '../support/cluster.js';
import type { ProxiedRequest } from '../support/cluster-dns-proxy.js';
import { PING_TYPE } from '../../events/types.js';
import { startEventing, type EventingPlane } from '../support/eventing.js';
import { APPLIED, condition, createClass, createConfiguration, createGateway, editSpec, programmedAndApplied, readGateway } from '../support/fixtures.js';
import { guessKindToResource } from '../support/install.js';
import { brokerForPods, podFunctionEnv, startInstallAdapters, startServingControlPlane } from '../support/serving-wiring.js';
import type { Relay } from '../support/pod-network.js';
import { controllerIdentity } from '../support/reconciler.js';
import { deleteClusterScoped } from '../support/cluster-scoped.js';
import { startServing, type ServingPlane } from '../support/serving.js';

// Scale to zero, proven with the real Knative Serving (controller, webhook,
// autoscaler, activator, queue-proxy; test/support/serving.ts) and the real
// Eventing data plane and ApiServerSource adapters (test/support/eventing.ts),
// on a control plane of its own with kube-scheduler, KWOK and the endpoints
// controllers. The shipped install (infra/, rendered by the pinned
// kustomize) goes through Serving's webhook; every Revision Pod KWOK runs
// gets the real queue-proxy and the real function (the shipped startup
// snapshot) in a network namespace on the Pod's IP.
//
// No test-only autoscaling configuration: the shipped 10 s window decides
// when a Pod scales to zero, as in a cluster. The PingSource test patches
// the resync schedule to every minute.
//
// SERVING_WAKE_RESULTS=<file> writes the measured wake path and Pod lifetime
// as JSON (bench/results/serving-wake.json; bench/REPORT.md renders it as P8).

const SHIPPED = 'infra';
const FAKE_NODE = 'fake-node-1';
const REVISION = `${SERVICE}-00001`;

const RevisionSchema = z.looseObject({
  metadata: z.looseObject({ annotations: z.record(z.string(), z.string()) }),
  spec: z.looseObject({
    containerConcurrency: z.number(),
    timeoutSeconds: z.number(),
    serviceAccountName: z.string(),
    enableServiceLinks: z.boolean().optional(),
    containers: z.array(z.looseObject({
      name: z.string(),
      image: z.string(),
      readinessProbe: z.looseObject({ httpGet: z.looseObject({ path: z.string() }), successThreshold: z.number().optional() }),
      livenessProbe: z.looseObject({ httpGet: z.looseObject({ path: z.string() }), periodSeconds: z.number(), timeoutSeconds: z.number(), failureThreshold: z.number() }),
      securityContext: z.looseObject({}),
      volumeMounts: z.array(z.looseObject({ name: z.string(), mountPath: z.string(), readOnly: z.boolean().optional() })),
    })).length(1),
    volumes: z.array(z.looseObject({ name: z.string(), configMap: z.looseObject({ name: z.string() }) })),
  }),
  status: z.looseObject({ conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional() }).optional(),
});

// Each of these tests waits for a scale to zero (scaledToZero: up to 180 s,
// with queue-proxy's 30 s drain in it) besides its own waits, beyond jest's
// default 120 s: a slow scale to zero must fail on its own message.
const SCALE_TO_ZERO_TEST_MS = 360_000;

describe('scale to zero with the real Knative Serving', () => {
  let cp: ControlPlane | undefined;
  let eventing: EventingPlane | undefined;
  let serving: ServingPlane | undefined;
  let wiring: EventWiring | undefined;
  const adapters: AdapterProcess[] = [];
  const relays: Relay[] = [];
  let ns = '';
  let cls = '';
  let controllerUser = '';
  let guessedSkip = '';
  /** The Revision's autoscaling window, as admitted (written beside the results). */
  let shippedWindow = '';
  const results: { wake?: Record<string, number>; warm?: Record<string, number>; ping?: Record<string, number> } = {};
  const scratch = mkdtempSync(join(tmpdir(), 'meridio2-serving-test-'));

  const custom = (): CustomObjectsApi => adminConfig().makeApiClient(CustomObjectsApi);
  const plane = (): ServingPlane => {
    if (!serving) throw new Error('Serving is not running');
    return serving;
  };

  beforeAll(async () => {
    cp = await startServingControlPlane([FAKE_NODE]);
    eventing = await startEventing();
    ns = await createNamespace('srv');
    cls = `meridio-${ns}`;
    const controller = await controllerIdentity(ns);
    controllerUser = controller.username;
    const brokerAlias = { url: '' };
    serving = await startServing({
      namespace: ns,
      proxy: eventing.proxy,
      functionEnv: podFunctionEnv(controller.kubeconfig, scratch, brokerAlias),
    });
    await createClass(cls);
    const broker = await brokerForPods(eventing, ns);
    relays.push(broker.relay);
    brokerAlias.url = broker.podUrl;
    wiring = await installEventWiring(ns, SHIPPED, null);
    expect(wiring.brokerUrl).toBe(broker.brokerUrl);
    const { guessed, gatewayWatch } = await startInstallAdapters(wiring, ns, eventing, await adapterIdentity(ns));
    adapters.push(guessed, gatewayWatch);
    // Its start-up line, kept before later output can push it out.
    guessedSkip = await waitFor('the ApiServerSource adapter to skip Gateways', () => guessed.output().split('\n').find((l) => l.includes(`Resource=${guessKindToResource('Gateway')}: it doesn't exist. skipping`)), { timeoutMs: 60000 });
  }, 40 * 60 * 1000);

  afterAll(async () => {
    const out = process.env.SERVING_WAKE_RESULTS;
    if (out) writeFileSync(out, `${JSON.stringify({ measuredAt: new Date().toISOString(), window: shippedWindow, ...results }, null, 2)}\n`);
    for (const a of adapters) await a.stop();
    await serving?.stop();
    await eventing?.stop();
    for (const r of relays) await r.close();
    // The ClusterRoleBindings of the identities, while their API server still runs.
    await deleteClusterScoped();
    await cp?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }, 180000);

  async function revision(): Promise<z.infer<typeof RevisionSchema>> {
    return RevisionSchema.parse(await custom().getNamespacedCustomObject({ group: 'serving.knative.dev', version: 'v1', namespace: ns, plural: 'revisions', name: REVISION }));
  }

  async function replicas(): Promise<number> {
    const d = await adminConfig().makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: ns, name: `${REVISION}-deployment` });
    return d.spec?.replicas ?? -1;
  }

  function auditEnd(): number {
    return readEvents(cp?.info.auditLog ?? '').end;
  }

  /** Until the function has handled nothing for 3 s: late deliveries (retries) have had their chance. */
  async function quietFunction(): Promise<void> {
    let last = eventing?.proxy.requests.length ?? 0;
    let since = Date.now();
    await waitFor('no more deliveries for 3 s', () => {
      const now = eventing?.proxy.requests.length ?? 0;
      if (now !== last) {
        last = now;
        since = Date.now();
      }
      return Date.now() - since > 3000 ? true : undefined;
    }, { timeoutMs: 120000, intervalMs: 100 });
  }

  /** When the function in a Pod logged "listening" (its own clock, ms since the epoch). */
  function listeningAt(run: { fn: { output(): string } } | undefined): number {
    for (const line of (run?.fn.output() ?? '').split('\n')) {
      const parsed = z.object({ msg: z.string(), time: z.number() }).safeParse((() => {
        try {
          return JSON.parse(line) as unknown;
        } catch {
          return undefined;
        }
      })());
      if (parsed.success && parsed.data.msg === 'listening') return parsed.data.time;
    }
    return Number.NaN;
  }

  async function scaledToZero(): Promise<void> {
    await waitFor('the Revision scaled to zero and its Pod processes gone', async () => ((await replicas()) === 0 && plane().runningPods().length === 0 ? true : undefined), { timeoutMs: 180000, intervalMs: 250 });
  }

  it('admission: the webhook defaults and validates the shipped Service; the Revision carries the shipped settings', async () => {
    const svc = z.looseObject({ spec: z.looseObject({ traffic: z.array(z.looseObject({ latestRevision: z.boolean(), percent: z.number() })) }), status: z.looseObject({ conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })) }) })
      .parse(await custom().getNamespacedCustomObject({ group: 'serving.knative.dev', version: 'v1', namespace: ns, plural: 'services', name: SERVICE }));
    // spec.traffic is written by the defaulting webhook only.
    expect(svc.spec.traffic).toEqual([{ latestRevision: true, percent: 100 }]);
    const rev = await revision();
    expect(rev.metadata.annotations['autoscaling.knative.dev/min-scale']).toBe('0');
    expect(rev.metadata.annotations['autoscaling.knative.dev/max-scale']).toBe('5');
    expect(rev.metadata.annotations['autoscaling.knative.dev/window']).toBe('10s');
    shippedWindow = rev.metadata.annotations['autoscaling.knative.dev/window'] ?? '';
    expect(rev.spec.containerConcurrency).toBe(10);
    expect(rev.spec.timeoutSeconds).toBe(60);
    expect(rev.spec.serviceAccountName).toBe('meridio-2-gateway-controller');
    // No service-link variables in the Pod's environment, whatever the
    // cluster's config-defaults say: on the Revision and on the Pod template
    // Serving writes from it.
    expect(rev.spec.enableServiceLinks).toBe(false);
    const podTemplate = (await adminConfig().makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: ns, name: `${REVISION}-deployment` })).spec?.template.spec;
    expect(podTemplate?.enableServiceLinks).toBe(false);
    const [c] = rev.spec.containers;
    expect(c?.readinessProbe.httpGet.path).toBe('/readyz');
    expect(c?.livenessProbe).toEqual(expect.objectContaining({ httpGet: expect.objectContaining({ path: '/healthz' }), periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 }));
    expect(c?.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } });
    expect(c?.volumeMounts).toEqual([{ name: 'lb-template', mountPath: '/etc/meridio-2/templates', readOnly: true }]);
    expect(rev.spec.volumes).toHaveLength(1);
    expect(rev.spec.volumes[0]?.configMap.name).toMatch(/^meridio-2-lb-template-[a-z0-9]+$/);
    // Admission for real: the API server called Serving's mutating webhook
    // on the Service's write (its audit annotations name the configuration).
    const writes = readEvents(cp?.info.auditLog ?? '').events.filter((e) => resourceOf(e) === 'services' && e.objectRef?.name === SERVICE && e.objectRef.namespace === ns && e.objectRef.apiGroup === 'serving.knative.dev' && ['create', 'patch', 'update'].includes(e.verb));
    const mutations = writes.flatMap((e) => Object.entries(e.annotations ?? {}).filter(([k]) => k.startsWith('mutation.webhook.admission.k8s.io/')).map(([, v]) => v));
    expect(mutations.some((m) => m.includes('"configuration":"webhook.serving.knative.dev"') && m.includes('"mutated":true'))).toBe(true);
  });

  it('scale to zero: with no events the autoscaler scales the Revision to 0 and no function process is left', async () => {
    // The first Pod (initial scale 1) ran the real queue-proxy and function...
    await waitFor('the first Revision Pod running as processes', () => (plane().pods.length > 0 ? true : undefined), { timeoutMs: 120000 });
    const first = plane().pods[0];
    // ...and nothing sends it a request: the autoscaler, scraping its
    // queue-proxy, sees no concurrency and scales to zero.
    await scaledToZero();
    expect(first?.fn.alive()).toBe(false);
    expect(first?.queue.alive()).toBe(false);
  }, SCALE_TO_ZERO_TEST_MS);

  /** The LB Deployment writes the controller made since the audit log offset `from`. */
  function deploymentWrites(gw: string, from: number): number {
    return readEvents(cp?.info.auditLog ?? '', from).events.filter((e) => resourceOf(e) === 'deployments' && e.objectRef?.name === `sllbr-${gw}` && e.objectRef.namespace === ns && e.user.username === controllerUser && ['create', 'update', 'patch'].includes(e.verb) && (e.responseStatus?.code ?? 0) < 300).length;
  }

  /** Deliveries of events whose subject ends with `subjectEnd` to the function's address (Broker filter → ingress stand-in → activator). */
  function deliveries(subjectEnd: string, from: number): ProxiedRequest[] {
    return eventing?.proxy.requests.slice(from).filter((r) => r.host.startsWith(`${SERVICE}.${ns}.`) && (r.ceSubject ?? '').endsWith(subjectEnd)) ?? [];
  }

  it('a Gateway created while scaled to zero: its event (gateway-watch adapter) wakes the function and the Gateway converges', async () => {
    await createConfiguration(ns, 'cfg');
    // The configuration's own event wakes the function; let it scale to zero again.
    await waitFor('the function woken by the configuration event', () => (plane().pods.length > 1 ? true : undefined), { timeoutMs: 120000 });
    await scaledToZero();
    const mark = eventing?.proxy.requests.length ?? 0;
    const audit = auditEnd();
    const podsBefore = plane().pods.length;
    await createGateway(ns, 'gw', cls, 'cfg');
    // No PingSource adapter runs in this file until the resync test: only a
    // Gateway event can make this converge.
    await waitFor('gw Programmed and Applied', programmedAndApplied(ns, 'gw', '1'), { timeoutMs: 120000 });
    expect(plane().pods.length).toBeGreaterThan(podsBefore);
    // The event that woke it came from the gateway-watch ContainerSource's
    // adapter: the ApiServerSource's adapter, configured by Knative's guess
    // ("gatewaies"), skips Gateways. (Both name the resource in the subject
    // by that guess: tools/knative/EVENTING.md.)
    expect(guessedSkip).toContain('gateway.networking.k8s.io/v1');
    expect(deliveries(`/${guessKindToResource('Gateway')}/gw`, mark).length).toBeGreaterThan(0);
    expect(deploymentWrites('gw', audit)).toBe(1);
  }, SCALE_TO_ZERO_TEST_MS);

  it('wake from zero: a GatewayConfiguration edit → adapter → Broker → Trigger → activator → Pod → queue-proxy → function; one Deployment write, Applied names the new generation', async () => {
    await scaledToZero();
    const mark = eventing?.proxy.requests.length ?? 0;
    const audit = auditEnd();
    const podsBefore = plane().pods.length;
    const editedAt = Date.now();
    const edited = await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg', (spec) => ({ ...spec, horizontalScaling: { replicas: 3, enforceReplicas: true } }));
    expect(edited.metadata.generation).toBe(2);
    await waitFor('gw applied at configuration generation 2', programmedAndApplied(ns, 'gw', '2'), { timeoutMs: 120000, intervalMs: 50 });
    const convergedAt = Date.now();
    const applied = condition(await readGateway(ns, 'gw'), APPLIED);
    expect(applied?.status).toBe('True');
    expect(applied?.message ?? '').toContain('GatewayConfiguration cfg generation 2 applied');
    // A new Pod ran: the request was held while the Revision scaled from zero.
    expect(plane().pods.length).toBeGreaterThan(podsBefore);
    const woken = plane().pods[podsBefore];
    // The edit reached the function through the activator: every delivery
    // of the configuration's update, retries included, went that way.
    const edits = deliveries('/gatewayconfigurations/cfg', mark);
    expect(edits.length).toBeGreaterThan(0);
    // However many deliveries (a Broker retry while the Pod started counts),
    // the Deployment was written once.
    expect(woken?.fn.alive() ?? false).toBe(true);
    await quietFunction();
    expect(deploymentWrites('gw', audit)).toBe(1);
    results.wake = {
      editToConverged: convergedAt - editedAt,
      editToDelivery: (edits[0]?.at ?? Number.NaN) - editedAt,
      deliveryToPodRunning: (woken?.startedAt ?? Number.NaN) - (edits[0]?.at ?? Number.NaN),
      podRunningToFunctionListening: listeningAt(woken) - (woken?.startedAt ?? Number.NaN),
      functionListeningToConverged: convergedAt - listeningAt(woken),
      deliveries: edits.length,
      deploymentWrites: 1,
    };

    // Warm: the same edit path while the Pod still runs.
    const warmAudit = auditEnd();
    const warmAt = Date.now();
    await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg', (spec) => ({ ...spec, horizontalScaling: { replicas: 2, enforceReplicas: true } }));
    await waitFor('gw applied at configuration generation 3', programmedAndApplied(ns, 'gw', '3'), { timeoutMs: 60000, intervalMs: 50 });
    const warm = Date.now() - warmAt;
    expect(plane().pods.length).toBe(podsBefore + 1);
    await quietFunction();
    expect(deploymentWrites('gw', warmAudit)).toBe(1);
    results.warm = { editToConverged: warm };
  }, SCALE_TO_ZERO_TEST_MS);

  it('the PingSource resync also wakes the function from zero', async () => {
    await scaledToZero();
    const podsBefore = plane().pods.length;
    // The shipped schedule fires every 5 minutes; the test's every minute.
    await custom().patchNamespacedCustomObject({ group: 'sources.knative.dev', version: 'v1', namespace: ns, plural: 'pingsources', name: 'meridio-2-resync', body: [{ op: 'replace', path: '/spec/schedule', value: '* * * * *' }] });
    const mark = eventing?.proxy.requests.length ?? 0;
    await eventing?.startPing();
    const resync = await waitFor('a resync event delivered to the function', () => eventing?.proxy.requests.slice(mark).find((r) => r.host.startsWith(`${SERVICE}.${ns}.`) && r.ceType === PING_TYPE && r.status >= 200 && r.status < 300), { timeoutMs: 150000 });
    expect(resync.status).toBeLessThan(300);
    expect(plane().pods.length).toBeGreaterThan(podsBefore);
    // Idle cost: how long the Pod one ping woke lives, with the shipped
    // window. Stop the pings first, so that only this one counts.
    const eventingPlane = eventing;
    await eventingPlane?.stopPing();
    const pod = plane().pods[podsBefore];
    await waitFor('the pinged Pod gone', () => (pod?.stoppedAt !== undefined ? true : undefined), { timeoutMs: 180000, intervalMs: 250 });
    expect(pod?.fn.alive()).toBe(false);
    // Stopped as a kubelet stops it: the preStop hook saw queue-proxy's
    // drain through, then the function drained nothing left in flight.
    expect(pod?.preStop).toBe(200);
    expect(pod?.queue.output()).toContain('Attached drain handler from user-container');
    expect(pod?.fn.output()).toMatch(/"msg":"stopped"/);
    const otherDeliveries = eventing?.proxy.requests.slice(mark).filter((r) => r.host.startsWith(`${SERVICE}.${ns}.`) && r.at >= (pod?.startedAt ?? 0) && r.ceId !== resync.ceId) ?? [];
    results.ping = {
      podLifetime: (pod?.stoppedAt ?? Number.NaN) - (pod?.startedAt ?? Number.NaN),
      lastDeliveryToPodGone: (pod?.stoppedAt ?? Number.NaN) - Math.max(resync.at, ...otherDeliveries.map((r) => r.at)),
      deliveriesWhileUp: 1 + otherDeliveries.length,
    };
    // Two Pod stops (the one before, this one), each with queue-proxy's 30 s
    // drain, a minute's schedule and a window: more than jest's default.
  }, 360_000);

  it('a Broker retry during the wake (the first delivery timed out while the Pod started) writes the Deployment once', async () => {
    await scaledToZero();
    // Test-only: a 0.5 s delivery timeout on the update Trigger, so that the
    // first attempt gives up while the activator still holds it and the
    // Broker's channel delivers the event again. The last test of the file:
    // removing the timeout from the Trigger again did not reach the channel
    // within a minute (seen with these reconcilers), so the change stays.
    const trigger = { group: 'eventing.knative.dev', version: 'v1', namespace: ns, plural: 'triggers', name: 'meridio-2-apiserver-update' };
    await custom().patchNamespacedCustomObject({ ...trigger, body: [{ op: 'add', path: '/spec/delivery/timeout', value: 'PT0.5S' }] });
    const channelTimeouts = async (): Promise<(string | undefined)[]> => {
      const list = z.object({ items: z.array(z.looseObject({ spec: z.looseObject({ subscribers: z.array(z.looseObject({ delivery: z.looseObject({ timeout: z.string().optional() }).optional() })).default([]) }) })) })
        .parse(await custom().listNamespacedCustomObject({ group: 'messaging.knative.dev', version: 'v1', namespace: ns, plural: 'inmemorychannels' }));
      return list.items.flatMap((c) => c.spec.subscribers.map((x) => x.delivery?.timeout));
    };
    await waitFor('the channel delivering with the 0.5 s timeout', async () => ((await channelTimeouts()).includes('PT0.5S') ? true : undefined), { timeoutMs: 60000, intervalMs: 250 });
    const mark = eventing?.proxy.requests.length ?? 0;
    const audit = auditEnd();
    const edited = await editSpec(GATEWAY_CONFIGURATIONS, ns, 'cfg', (spec) => ({ ...spec, horizontalScaling: { replicas: 4, enforceReplicas: true } }));
    const generation = String(edited.metadata.generation);
    await waitFor(`gw applied at configuration generation ${generation}`, programmedAndApplied(ns, 'gw', generation), { timeoutMs: 120000 });
    await quietFunction();
    // The event reached the function's address more than once...
    const edits = deliveries('/gatewayconfigurations/cfg', mark);
    expect(new Set(edits.map((r) => r.ceId)).size).toBe(1);
    expect(edits.length).toBeGreaterThan(1);
    // ...and the Deployment was written once: the later delivery found it applied.
    expect(deploymentWrites('gw', audit)).toBe(1);
  }, SCALE_TO_ZERO_TEST_MS);
});

