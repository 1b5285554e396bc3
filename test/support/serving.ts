import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { z } from 'zod';
import { ensureServingAssets, type ServingAssets } from '../../tools/knative/build.mjs';
import { freePort } from '../../tools/controlplane/free-port.js';
import { writeKubeconfig } from '../../tools/controlplane/pki.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { SHIPPED_VARIANT, variantArgs } from '../../tools/harness/function-process.js';
import { repoRoot } from '../../tools/harness/repo-root.js';
import type { ClusterDnsProxy } from './cluster-dns-proxy.js';
import { adminConfig, clusterInfo } from './cluster.js';
import { startGoProcess, tail, type GoProcess } from './go-process.js';
import { applyManifest, localEndpointSlice, manifestsOf, objectManifest } from './install.js';
import { GATEWAY, relayToLoopback, startPodSandbox, writeHostsFile, type PodSandbox, type Relay } from './pod-network.js';

// The real Knative Serving control and data plane (knative.dev/serving
// v0.50.0, built by tools/knative/build.mts), out of cluster, on a control
// plane with kube-scheduler, KWOK and the endpoints controllers:
//
//   controller  (tools/knative/serving-controller)  host process
//   webhook     (cmd/webhook)     host process; the API server calls it at
//                                 GATEWAY (aggregator routing)
//   autoscaler  (cmd/autoscaler)  Pod sandbox 10.245.0.2 (binds :8080)
//   activator   (cmd/activator)   Pod sandbox 10.245.0.3 (binds :8012/:8013)
//   each Revision Pod that KWOK runs: a Pod sandbox on the Pod IP KWOK gave
//   it, with the real queue-proxy (cmd/queue) and the real function (the
//   shipped startup snapshot): the process kubelet below.
//
// Stand-ins, for what a cluster's network and kubelet provide (docs/testing.md,
// "Knative Serving in the tests"):
//   - the process kubelet: starts a Revision Pod's containers as processes
//     once KWOK reports the Pod running, stops them when the Pod goes away
//     in a kubelet's order (queue-proxy drains first: the user container's
//     preStop hook waits for it; then the function gets SIGTERM);
//   - the KIngress status writer: marks every KIngress Ready with its
//     observedGeneration and load balancers, as an ingress (all of them
//     Envoy-based) would once Envoy is programmed; with the cluster DNS
//     proxy it routes a KIngress host to the activator with the headers the
//     KIngress asks for;
//   - Endpoints for the activator and webhook Services (their processes are
//     not Pods).

export const SERVING_NAMESPACE = 'knative-serving';
const AUTOSCALER_IP = '10.245.0.2';
const ACTIVATOR_IP = '10.245.0.3';
const ACTIVATOR_PORT = 8012;
const AUTOSCALER_HOST = `autoscaler.${SERVING_NAMESPACE}.svc.cluster.local`;
const REVISION_LABEL = 'serving.knative.dev/revision';
/** queue-proxy's admin port and drain endpoint: the user container's preStop hook (networking.QueueAdminPort, queue.RequestQueueDrainPath). */
const QUEUE_ADMIN_PORT = 8022;
const QUEUE_DRAIN_PATH = '/wait-for-drain';

export interface PodRun {
  pod: string;
  ip: string;
  /** The user container's image. */
  image: string;
  /** When the kubelet saw the Pod running (ms since the epoch). */
  startedAt: number;
  /** When the kubelet saw the Pod gone or deleted and began stopping it (ms since the epoch). */
  deletedAt?: number;
  /** When its processes had stopped, queue-proxy's drain included (ms since the epoch). */
  stoppedAt?: number;
  /** What the user container's preStop hook (queue-proxy's /wait-for-drain) answered: a status, or why it failed. */
  preStop?: number | string;
  /** The Pod's terminationGracePeriodSeconds, in ms. */
  graceMs: number;
  sandbox: PodSandbox;
  queue: GoProcess;
  fn: GoProcess;
}

export interface ServingPlane {
  assets: ServingAssets;
  controller: GoProcess;
  webhook: GoProcess;
  autoscaler: GoProcess;
  activator: GoProcess;
  /** Every Revision Pod the process kubelet ran, in order. */
  pods: PodRun[];
  /** Revision Pods whose processes are running now. */
  runningPods(): PodRun[];
  stop(): Promise<void>;
}

export interface ServingOptions {
  /** The namespace whose Revision Pods the process kubelet runs. */
  namespace: string;
  proxy: ClusterDnsProxy;
  /**
   * Environment the process kubelet gives the function besides the Pod's:
   * what the cluster would inject (the ServiceAccount token as a kubeconfig,
   * K_SINK from the SinkBinding). Receives the Pod's relays.
   */
  functionEnv: (relays: { apiServer: Relay }) => Promise<Record<string, string>>;
  /**
   * What a Revision Pod's image runs, as a kubelet would pull and start that
   * image: the directory of a built tree whose shipped startup snapshot the
   * process kubelet starts. Default: this tree, whatever the image.
   */
  functionTree?: (image: string) => string;
}


function yamlFiles(dir: string): string[] {
  return readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort().map((f) => join(dir, f));
}

/** A selector-less Service whose endpoints (a process, not a Pod) are written here, in both APIs. */
async function serviceAt(name: string, ports: { name: string; port: number; targetPort: number; appProtocol?: string }[], address: string): Promise<void> {
  await applyManifest(objectManifest({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: SERVING_NAMESPACE }, spec: { ports: ports.map((p) => ({ name: p.name, port: p.port, targetPort: p.targetPort, ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}) })) } }));
  await applyManifest(objectManifest({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name, namespace: SERVING_NAMESPACE }, subsets: [{ addresses: [{ ip: address }], ports: ports.map((p) => ({ name: p.name, port: p.targetPort })) }] }));
  await applyManifest(objectManifest(localEndpointSlice(name, SERVING_NAMESPACE, address, ports.map((p) => ({ name: p.name, port: p.targetPort })))));
}

/**
 * Serving's configuration: the module's config/core (ConfigMaps,
 * webhook configurations, the webhook's certificate Secret), config-network
 * and the KIngress, ServerlessService and Certificate CRDs from
 * knative.dev/networking, the Image CRD from knative.dev/caching.
 */
async function installServingObjects(assets: ServingAssets, webhookPort: number): Promise<void> {
  await applyManifest(objectManifest({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: SERVING_NAMESPACE } }));
  // Serving's own CRDs come with Eventing's (ensureKnativeCrds, startEventing).
  const crdFiles = [
    join(assets.networkingConfig, 'certificate.yaml'),
    join(assets.networkingConfig, 'ingress.yaml'),
    join(assets.networkingConfig, 'serverlessservice.yaml'),
    join(assets.networkingConfig, 'domain-claim.yaml'),
    join(assets.cachingConfig, 'image.yaml'),
  ];
  for (const f of crdFiles) for (const m of manifestsOf(f)) if (m.object.kind === 'CustomResourceDefinition') await applyManifest(m);
  const api = adminConfig().makeApiClient(CustomObjectsApi);
  await waitFor('Serving, networking and caching CRDs served', async () => {
    for (const [group, version, plural] of [['serving.knative.dev', 'v1', 'services'], ['networking.internal.knative.dev', 'v1alpha1', 'ingresses'], ['networking.internal.knative.dev', 'v1alpha1', 'serverlessservices'], ['caching.internal.knative.dev', 'v1alpha1', 'images'], ['autoscaling.internal.knative.dev', 'v1alpha1', 'podautoscalers']] as const) {
      try {
        await api.listClusterCustomObject({ group, version, plural, limit: 1 });
      } catch {
        return undefined;
      }
    }
    return true;
  }, { timeoutMs: 60000, intervalMs: 250 });
  for (const f of [...yamlFiles(join(assets.servingConfig, 'configmaps')), join(assets.networkingConfig, 'config-network.yaml')]) {
    for (const m of manifestsOf(f)) {
      const data = (m.object as { data?: Record<string, string> }).data ?? {};
      const name = m.object.metadata.name;
      // config-deployment: the shipped image name has no registry a test
      // could resolve a digest from (tag resolution is a registry's job, not
      // Serving's admission), so its registry is on the skip list.
      if (name === 'config-deployment') await applyManifest(objectManifest({ ...m.object, data: { ...data, 'registries-skipping-tag-resolving': 'kind.local,ko.local,dev.local,index.docker.io' } }));
      else await applyManifest(m);
    }
  }
  for (const f of yamlFiles(join(assets.servingConfig, 'webhooks'))) for (const m of manifestsOf(f)) await applyManifest(m);
  await serviceAt('webhook', [{ name: 'https-webhook', port: 443, targetPort: webhookPort }], GATEWAY);
  await serviceAt('activator-service', [
    { name: 'http', port: 80, targetPort: ACTIVATOR_PORT },
    { name: 'http2', port: 81, targetPort: 8013, appProtocol: 'kubernetes.io/h2c' },
  ], ACTIVATOR_IP);
  await serviceAt('autoscaler', [{ name: 'http', port: 8080, targetPort: 8080 }], AUTOSCALER_IP);
}

// --- The KIngress status writer and the ingress route.

const KIngressSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string(), namespace: z.string(), generation: z.number().optional() }),
  spec: z.looseObject({
    rules: z.array(z.looseObject({
      hosts: z.array(z.string()).default([]),
      http: z.looseObject({
        paths: z.array(z.looseObject({
          splits: z.array(z.looseObject({ serviceName: z.string(), serviceNamespace: z.string(), percent: z.number().optional(), appendHeaders: z.record(z.string(), z.string()).optional() })).default([]),
          appendHeaders: z.record(z.string(), z.string()).optional(),
        })).default([]),
      }).optional(),
    })).default([]),
  }),
  status: z.looseObject({ observedGeneration: z.number().optional() }).optional(),
});
type KIngress = z.infer<typeof KIngressSchema>;

/** Host → headers the ingress adds (the split with the largest percent). */
function routesOf(ing: KIngress): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  for (const rule of ing.spec.rules) {
    const path = rule.http?.paths[0];
    const split = [...(path?.splits ?? [])].sort((a, b) => (b.percent ?? 0) - (a.percent ?? 0))[0];
    if (!split) continue;
    const headers = { ...path?.appendHeaders, ...split.appendHeaders };
    for (const h of rule.hosts) out.set(h, headers);
  }
  return out;
}

/**
 * The ingress (KIngress hosts → the activator, with the KIngress's headers)
 * and kube-proxy (`<service>.<namespace>.svc.cluster.local` → the first
 * ready endpoint of the Service, e.g. a Revision's public Service → the
 * activator in proxy mode, its Pods in serve mode), as routes of the cluster
 * DNS proxy, refreshed from the API every 200 ms; and the KIngress status.
 */
function startIngressStandIn(proxy: ClusterDnsProxy, namespace: string): { stop(): Promise<void> } {
  const api = adminConfig().makeApiClient(CustomObjectsApi);
  const core = adminConfig().makeApiClient(CoreV1Api);
  const routes = new Map<string, Record<string, string>>();
  let services = new Map<string, { host: string; port: number }>();
  proxy.route((host) => {
    const headers = routes.get(host);
    if (headers) return { host: ACTIVATOR_IP, port: ACTIVATOR_PORT, headers };
    return services.get(host);
  });
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        const next = new Map<string, { host: string; port: number }>();
        for (const ep of (await core.listNamespacedEndpoints({ namespace })).items) {
          const subset = ep.subsets?.find((x) => (x.addresses ?? []).length > 0);
          const address = subset?.addresses?.[0]?.ip;
          const port = subset?.ports?.find((p) => p.name === 'http')?.port ?? subset?.ports?.[0]?.port;
          if (address && port) next.set(`${ep.metadata?.name ?? ''}.${namespace}.svc.cluster.local`, { host: address, port });
        }
        services = next;
        const list = z.object({ items: z.array(KIngressSchema) }).parse(await api.listClusterCustomObject({ group: 'networking.internal.knative.dev', version: 'v1alpha1', plural: 'ingresses' }));
        for (const ing of list.items) {
          for (const [h, headers] of routesOf(ing)) routes.set(h, headers);
          const generation = ing.metadata.generation ?? 1;
          if (ing.status?.observedGeneration === generation) continue;
          const lb = { ingress: [{ domainInternal: `ingress-standin.${SERVING_NAMESPACE}.svc.cluster.local` }] };
          const now = new Date().toISOString();
          const status = {
            observedGeneration: generation,
            conditions: ['LoadBalancerReady', 'NetworkConfigured', 'Ready'].map((type) => ({ type, status: 'True', lastTransitionTime: now })),
            privateLoadBalancer: lb,
            publicLoadBalancer: lb,
          };
          await api.patchNamespacedCustomObjectStatus({ group: 'networking.internal.knative.dev', version: 'v1alpha1', namespace: ing.metadata.namespace, plural: 'ingresses', name: ing.metadata.name, body: [{ op: 'replace', path: '/status', value: status }] }).catch(async () => {
            await api.patchNamespacedCustomObjectStatus({ group: 'networking.internal.knative.dev', version: 'v1alpha1', namespace: ing.metadata.namespace, plural: 'ingresses', name: ing.metadata.name, body: [{ op: 'add', path: '/status', value: status }] });
          });
        }
      } catch {
        // The next pass retries (a conflict, the API server restarting).
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

// --- The process kubelet.

interface EnvVar { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }

function containerEnv(pod: V1Pod, container: string, hostIp: string): Record<string, string> {
  const c = pod.spec?.containers.find((x) => x.name === container);
  if (!c) throw new Error(`Pod ${pod.metadata?.name ?? '?'} has no container ${container}`);
  const field = (path: string): string => {
    switch (path) {
      case 'metadata.name': return pod.metadata?.name ?? '';
      case 'metadata.namespace': return pod.metadata?.namespace ?? '';
      case 'status.podIP': return pod.status?.podIP ?? '';
      case 'status.hostIP': return hostIp;
      default: throw new Error(`the process kubelet does not know fieldRef ${path}`);
    }
  };
  const out: Record<string, string> = {};
  for (const e of (c.env ?? []) as EnvVar[]) out[e.name] = e.valueFrom?.fieldRef ? field(e.valueFrom.fieldRef.fieldPath) : (e.value ?? '');
  return out;
}

/**
 * ConfigMap volumes, written to a directory per Pod. The function reads its
 * template at a path under the volume's mountPath; environment values under
 * a mountPath are rewritten to that directory (the process runs in the
 * host's file system, where the mountPath does not exist).
 */
async function materializeVolumes(pod: V1Pod, container: string, dir: string, env: Record<string, string>): Promise<Record<string, string>> {
  const core = adminConfig().makeApiClient(CoreV1Api);
  const c = pod.spec?.containers.find((x) => x.name === container);
  const out = { ...env };
  for (const mount of c?.volumeMounts ?? []) {
    const vol = pod.spec?.volumes?.find((v) => v.name === mount.name);
    if (!vol?.configMap?.name) continue;
    const cm = await core.readNamespacedConfigMap({ namespace: pod.metadata?.namespace ?? '', name: vol.configMap.name });
    const target = join(dir, mount.name);
    mkdirSync(target, { recursive: true });
    for (const [k, v] of Object.entries(cm.data ?? {})) writeFileSync(join(target, k), v);
    for (const [k, v] of Object.entries(out)) if (v.startsWith(`${mount.mountPath}/`) || v === mount.mountPath) out[k] = target + v.slice(mount.mountPath.length);
  }
  return out;
}

function startProcessKubelet(opts: { namespace: string; queueBin: string; stateDir: string; apiServer: Relay; functionEnv: ServingOptions['functionEnv']; functionTree?: ServingOptions['functionTree'] }): { pods: PodRun[]; stop(): Promise<void> } {
  const core = adminConfig().makeApiClient(CoreV1Api);
  const pods: PodRun[] = [];
  const live = new Map<string, PodRun>();
  let stopped = false;
  const startPod = async (pod: V1Pod): Promise<void> => {
    const name = pod.metadata?.name ?? '';
    const ip = pod.status?.podIP ?? '';
    const sandbox = await startPodSandbox({ name, podIp: ip });
    const startedAt = Date.now();
    const queueEnv = containerEnv(pod, 'queue-proxy', GATEWAY);
    const queue = sandbox.exec(`${name}/queue-proxy`, opts.queueBin, [], queueEnv);
    const user = pod.spec?.containers.find((c) => c.name !== 'queue-proxy');
    if (!user) throw new Error(`Pod ${name} has no user container`);
    const env = await materializeVolumes(pod, user.name, join(opts.stateDir, name), containerEnv(pod, user.name, GATEWAY));
    // Every release's image starts its snapshot the same way (its Dockerfile's CMD and NODE_OPTIONS).
    const tree = opts.functionTree?.(user.image ?? '') ?? repoRoot();
    const fn = sandbox.exec(`${name}/${user.name}`, process.execPath, [...variantArgs(SHIPPED_VARIANT)], { ...env, ...SHIPPED_VARIANT.env, ...(await opts.functionEnv({ apiServer: opts.apiServer })) }, tree);
    const run: PodRun = { pod: name, ip, image: user.image ?? '', startedAt, sandbox, queue, fn, graceMs: (pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000 };
    pods.push(run);
    live.set(name, run);
  };
  // What a kubelet does with a deleted Revision Pod, for both containers at
  // once (serving pkg/reconciler/revision/resources/deploy.go, queue
  // sharedmain): queue-proxy has no preStop hook and gets SIGTERM at once; it
  // then drains (probes answer 503, it waits until no request came for its
  // quiet period) and exits. The user container's preStop hook is an HTTP GET
  // of queue-proxy's /wait-for-drain, which returns when that drain is over;
  // only then does the function get SIGTERM. All within the Pod's grace
  // period, after which whatever still runs is killed.
  const stopping = new Set<Promise<void>>();
  const stopPod = async (run: PodRun): Promise<void> => {
    live.delete(run.pod);
    run.deletedAt = Date.now();
    const deadline = run.deletedAt + run.graceMs;
    const preStop = fetch(`http://${run.ip}:${QUEUE_ADMIN_PORT}${QUEUE_DRAIN_PATH}`, { signal: AbortSignal.timeout(run.graceMs) })
      .then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      }, (err: unknown) => (err instanceof Error ? err.message : String(err)));
    const queueStopped = run.queue.stop(run.graceMs);
    run.preStop = await preStop;
    await run.fn.stop(Math.max(deadline - Date.now(), 0));
    await queueStopped;
    await run.sandbox.stop(0);
    run.stoppedAt = Date.now();
  };
  const stopInBackground = (run: PodRun): void => {
    const p = stopPod(run).finally(() => stopping.delete(p));
    stopping.add(p);
  };
  const loop = (async () => {
    while (!stopped) {
      try {
        const list = await core.listNamespacedPod({ namespace: opts.namespace, labelSelector: REVISION_LABEL });
        const present = new Set<string>();
        for (const pod of list.items) {
          const name = pod.metadata?.name ?? '';
          if (pod.metadata?.deletionTimestamp) continue;
          present.add(name);
          if (!live.has(name) && pod.status?.phase === 'Running' && pod.status.podIP) await startPod(pod);
        }
        // In the background, as a kubelet does: the drain takes its quiet
        // period, and other Pods start meanwhile.
        for (const run of [...live.values()]) if (!present.has(run.pod)) stopInBackground(run);
      } catch {
        // The next pass retries.
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const run of [...live.values()]) stopInBackground(run);
    await Promise.all([...stopping]);
  })();
  return {
    pods,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host, port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

function goEnv(extra: Record<string, string>): Record<string, string> {
  return { SYSTEM_NAMESPACE: SERVING_NAMESPACE, PROFILING_PORT: '0', POD_NAME: 'local', ...extra };
}

/**
 * Starts Serving against the control plane clusterInfo() names. `stop()`
 * stops everything it started, also after a failed start.
 */
export async function startServing(opts: ServingOptions): Promise<ServingPlane> {
  const assets = await ensureServingAssets();
  const info = clusterInfo();
  const stateDir = mkdtempSync(join(tmpdir(), 'meridio2-serving-'));
  const started: GoProcess[] = [];
  const sandboxes: PodSandbox[] = [];
  let relay: Relay | undefined;
  const relays: Relay[] = [];
  let ingress: { stop(): Promise<void> } | undefined;
  let kubelet: ReturnType<typeof startProcessKubelet> | undefined;
  const stop = async (): Promise<void> => {
    await kubelet?.stop();
    await ingress?.stop();
    for (const p of [...started].reverse()) await p.stop();
    for (const s of [...sandboxes].reverse()) await s.stop();
    await relay?.close();
    for (const r of relays) await r.close();
    const dir = process.env.SERVING_LOG_DIR;
    if (dir) {
      mkdirSync(dir, { recursive: true });
      const all = [...started, ...(kubelet?.pods.flatMap((p) => [p.queue, p.fn]) ?? [])];
      for (const p of all) writeFileSync(join(dir, `${p.name.replace(/\//g, '_')}.log`), p.output());
    }
    rmSync(stateDir, { recursive: true, force: true });
  };
  try {
    const webhookPort = await freePort();
    await installServingObjects(assets, webhookPort);
    const kubeconfigArg = `--kubeconfig=${info.adminKubeconfig}`;
    const host = (name: string, bin: string, env: Record<string, string>, args: string[] = []): GoProcess => {
      const p = startGoProcess(name, bin, [kubeconfigArg, ...args], goEnv(env));
      started.push(p);
      return p;
    };
    const controller = host('serving-controller', assets.serving.controller, {}, ['--disable-ha']);
    const webhook = host('serving-webhook', assets.serving.webhook, { WEBHOOK_NAME: 'webhook', WEBHOOK_PORT: String(webhookPort) }, ['--disable-ha']);

    // The autoscaler's sandbox comes first: its link brings up GATEWAY,
    // where the relays listen.
    const autoscalerPod = await startPodSandbox({ name: 'autoscaler', podIp: AUTOSCALER_IP });
    sandboxes.push(autoscalerPod);
    relay = await relayToLoopback(Number(new URL(info.server).port));
    // Pods reach the API server through the relay; its certificate names GATEWAY too.
    const podKubeconfig = join(stateDir, 'pod-admin.kubeconfig');
    writeKubeconfig(podKubeconfig, `https://${relay.host}:${relay.port}`, info.caCert, info.admin);
    const inPod = (sandbox: PodSandbox, name: string, bin: string, env: Record<string, string>): GoProcess => {
      const p = sandbox.exec(name, bin, [`--kubeconfig=${podKubeconfig}`], goEnv(env));
      started.push(p);
      return p;
    };
    // The autoscaler probes a Revision's public Service by its cluster DNS
    // name before scaling to zero (is the activator in the path?): through
    // the cluster DNS proxy; Pod IPs (its metrics scrapes) and the API
    // server directly.
    const proxyRelay = await relayToLoopback(Number(new URL(opts.proxy.url).port));
    relays.push(proxyRelay);
    const autoscaler = inPod(autoscalerPod, 'autoscaler', assets.serving.autoscaler, {
      POD_NAME: 'autoscaler-local',
      POD_IP: AUTOSCALER_IP,
      HTTP_PROXY: `http://${proxyRelay.host}:${proxyRelay.port}`,
      NO_PROXY: '10.244.0.0/16,10.245.0.0/16',
    });
    const hosts = writeHostsFile(join(stateDir, 'activator-hosts'), { [AUTOSCALER_HOST]: AUTOSCALER_IP });
    const activatorPod = await startPodSandbox({ name: 'activator', podIp: ACTIVATOR_IP, hostsFile: hosts });
    sandboxes.push(activatorPod);
    const activator = inPod(activatorPod, 'activator', assets.serving.activator, { POD_NAME: 'activator-local', POD_IP: ACTIVATOR_IP });

    await waitFor('the Serving webhook to admit (its configurations reconciled)', async () => {
      for (const p of [controller, webhook, autoscaler, activator]) if (!p.alive()) throw new Error(`${p.name} exited: ${tail(p, 40)}`);
      if (!(await accepts(ACTIVATOR_IP, ACTIVATOR_PORT))) return undefined;
      // The webhook fills in its configurations' caBundle once its certificate exists.
      const hooks = await adminConfig().makeApiClient(CustomObjectsApi).getClusterCustomObject({ group: 'admissionregistration.k8s.io', version: 'v1', plural: 'mutatingwebhookconfigurations', name: 'webhook.serving.knative.dev' }) as { webhooks?: { clientConfig?: { caBundle?: string } }[] };
      return hooks.webhooks?.every((w) => w.clientConfig?.caBundle) ? true : undefined;
    }, { timeoutMs: 120000, intervalMs: 500 });

    ingress = startIngressStandIn(opts.proxy, opts.namespace);
    kubelet = startProcessKubelet({ namespace: opts.namespace, queueBin: assets.serving.queue, stateDir, apiServer: relay, functionEnv: opts.functionEnv, ...(opts.functionTree ? { functionTree: opts.functionTree } : {}) });
    const k = kubelet;
    return {
      assets,
      controller,
      webhook,
      autoscaler,
      activator,
      pods: k.pods,
      runningPods: () => k.pods.filter((p) => p.stoppedAt === undefined),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
