import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureKnativeAssets, type KnativeAssets } from '../../tools/knative/build.mjs';
import { freePort } from '../../tools/controlplane/free-port.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { startClusterDnsProxy, type ClusterDnsProxy } from './cluster-dns-proxy.js';
import type { Issuer } from './cert-issuer.js';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { adminConfig, clusterInfo } from './cluster.js';
import { startGoProcess, tail, type GoProcess } from './go-process.js';
import { applyManifest, ensureKnativeCrds, localEndpointSlice, manifestsOf, objectManifest } from './install.js';

// The real Knative Eventing data plane (MT channel-based Broker over the
// in-memory channel), out of cluster, on the shared test control plane:
//
//   ingress  (cmd/broker/ingress)       broker-ingress.knative-eventing.svc...
//   dispatcher (cmd/in_memory/channel_dispatcher)  the channels, on :8080
//   filter   (cmd/broker/filter)        broker-filter.knative-eventing.svc...
//   controllers (tools/knative/controllers): Broker, Trigger, Subscription,
//            InMemoryChannel and PingSource reconcilers
//   mtping   (cmd/mtping), started on demand by the PingSource test
//
// all built from knative.dev/eventing by tools/knative/build.mts. What
// Kubernetes would provide in a cluster is stood in for by objects the
// reconcilers read (Deployments, Services, EndpointSlices) and by a forward
// proxy for cluster DNS names (cluster-dns-proxy.ts).
//
// With `oidc: true`, Eventing's authentication-oidc feature is on
// (config-features): every sender presents a token minted for its receiver,
// and the ingress, the channel and the filter verify tokens against the API
// server's OIDC discovery at its default address, https://kubernetes.default.svc.
// In a cluster that name is the API server's Service; here the proxy tunnels
// it (CONNECT) to the test API server, whose serving certificate names it,
// and the verifiers trust it through the kubeconfig's CA, as a Pod would
// through its mounted service-account CA.

//
// With `tls` (a cert-manager stand-in, cert-issuer.ts), Eventing's
// transport-encryption feature is `permissive`: the ingress, the filter and
// the dispatcher serve HTTPS too, with the serving certificates the issuer
// wrote into the Secrets Eventing reads (mt-broker-ingress-server-tls,
// mt-broker-filter-server-tls, imc-dispatcher-server-tls: tls.crt, tls.key,
// ca.crt, as cert-manager's Certificates would), and the Broker and its
// channel gain an https address with that CA. The channel then delivers to
// the filter over https (a CONNECT tunnel through the proxy, so TLS is
// end to end). The ingress's certificate names 127.0.0.1 besides its cluster
// names: the function reaches it at `ingressHttps` (what the name would
// resolve to in a cluster), and undici checks the name it dialled.

export const SYSTEM_NAMESPACE = 'knative-eventing';
const INGRESS_HOST = `broker-ingress.${SYSTEM_NAMESPACE}.svc.cluster.local`;
const FILTER_HOST = `broker-filter.${SYSTEM_NAMESPACE}.svc.cluster.local`;
/** Hard-coded in the dispatcher (pkg/reconciler/inmemorychannel/dispatcher). */
const DISPATCHER_PORTS = [8080, 8443];
/** Any non-loopback address: the API server refuses loopback endpoints, and only readiness is read. */
const PLACEHOLDER_ENDPOINT = '10.255.0.1';
/** Eventing's default `oidc-discovery-base-url`: the API server's in-cluster name. */
const API_SERVER_HOST = 'kubernetes.default.svc:443';

export interface EventingPlane {
  assets: KnativeAssets;
  proxy: ClusterDnsProxy;
  ingress: GoProcess;
  filter: GoProcess;
  dispatcher: GoProcess;
  controllers: GoProcess;
  /** Environment for Go clients that must reach cluster DNS names. */
  proxyEnv: Record<string, string>;
  /** Whether Eventing's authentication-oidc feature is on. */
  oidc: boolean;
  /** With transport encryption: the ingress's HTTPS listener on loopback, and the CA of its certificate. */
  ingressHttps?: { port: number; caPem: string };
  /** The PingSource adapter; one at a time. */
  startPing(): Promise<GoProcess>;
  /** Stops the PingSource adapter, if it runs. */
  stopPing(): Promise<void>;
  stop(): Promise<void>;
}

// --- A machine-wide lock on the dispatcher's fixed ports: two test runs on
// one machine (two worktrees, say) take turns instead of one silently
// talking to the other's dispatcher.

const LOCK = join(tmpdir(), 'meridio2-eventing-dispatcher.lock');

function lockHolder(): number {
  try {
    return Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
  } catch {
    return 0;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function takeDispatcherLock(timeoutMs: number): Promise<() => void> {
  await waitFor(`the dispatcher port lock ${LOCK} (held by pid ${lockHolder() || '?'})`, () => {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      return true;
    } catch {
      const holder = lockHolder();
      if (holder > 0 && !processAlive(holder)) rmSync(LOCK, { recursive: true, force: true });
      return undefined;
    }
  }, { timeoutMs, intervalMs: 1000 });
  return () => {
    if (lockHolder() === process.pid) rmSync(LOCK, { recursive: true, force: true });
  };
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '0.0.0.0', () => srv.close(() => resolve(true)));
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

// --- Cluster objects.


/**
 * What the data plane reads from the cluster: the Eventing CRDs (core and the
 * in-memory channel), the module's own ConfigMaps, and stand-ins for what
 * Deployments, Services and EndpointSlices would report in a cluster.
 * Idempotent: every test file may call it on the shared control plane.
 */
async function installEventingObjects(assets: KnativeAssets, opts: { oidc: boolean; transportEncryption: boolean; observability: Record<string, string> }): Promise<void> {
  await ensureKnativeCrds();
  for (const f of readdirSync(assets.imcCrds).filter((x) => x.endsWith('.yaml'))) for (const m of manifestsOf(join(assets.imcCrds, f))) await applyManifest(m);
  await applyManifest(objectManifest({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: SYSTEM_NAMESPACE } }));
  const configs = join(assets.eventingConfig, 'core', 'configmaps');
  for (const f of readdirSync(configs).filter((x) => x.endsWith('.yaml')).sort()) {
    for (const m of manifestsOf(join(configs, f))) {
      // The filter logs each event it receives at debug level: the test
      // reads that line. The rest of config-logging stays as shipped.
      const data = (m.object as { data?: Record<string, string> }).data ?? {};
      if (m.object.metadata.name === 'config-logging') {
        await applyManifest(objectManifest({ ...m.object, data: { ...data, 'loglevel.mt_broker_filter': 'debug' } }));
      } else if (m.object.metadata.name === 'config-features') {
        // Always written, so that a run without OIDC after one with it
        // (the control plane is shared by every test file) has it off again.
        await applyManifest(objectManifest({ ...m.object, data: { ...data, 'authentication-oidc': opts.oidc ? 'enabled' : 'disabled', 'transport-encryption': opts.transportEncryption ? 'permissive' : 'disabled' } }));
      } else if (m.object.metadata.name === 'config-observability') {
        // Read once when each data-plane process starts; the shipped data
        // (an example only) again for a plane started without any.
        await applyManifest(objectManifest({ ...m.object, data: { ...data, ...opts.observability } }));
      } else {
        await applyManifest(m);
      }
    }
  }
  for (const m of manifestsOf(join(assets.eventingConfig, 'channels', 'in-memory-channel', 'configmaps', 'event-dispatcher.yaml'))) await applyManifest(m);
  // The broker ingress sends to the Broker's channel as this ServiceAccount
  // when OIDC is on (the channel's EventPolicy, made by the Broker
  // reconciler, admits only it).
  for (const m of manifestsOf(join(assets.eventingConfig, 'brokers', 'mt-channel-broker', 'roles', 'ingress-serviceaccount-oidc.yaml'))) await applyManifest(m);

  // The IMC reconciler marks channels ready only when the dispatcher
  // Deployment is Available; with replicas 0, kube-controller-manager says so.
  await applyManifest(objectManifest(deployment('imc-dispatcher', 'dispatcher', 0)));
  // The PingSource reconciler requires the shared adapter Deployment and
  // scales it to 1. No Pod ever runs here (no scheduler, no kubelet); with
  // maxUnavailable 1 the Deployment is still Available, which is all the
  // reconciler reads. The adapter itself runs as a process (startPing).
  await applyManifest(objectManifest(deployment('pingsource-mt-adapter', 'dispatcher', 0, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } })));
  // Pods of that Deployment need the namespace's default ServiceAccount,
  // which no serviceaccount controller creates here.
  await applyManifest(objectManifest({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: SYSTEM_NAMESPACE } }));
  for (const svc of ['imc-dispatcher', 'broker-ingress', 'broker-filter']) {
    await applyManifest(objectManifest({ apiVersion: 'v1', kind: 'Service', metadata: { name: svc, namespace: SYSTEM_NAMESPACE }, spec: { selector: { app: svc }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] } }));
    await applyManifest(objectManifest(localEndpointSlice(svc, SYSTEM_NAMESPACE, PLACEHOLDER_ENDPOINT, [{ name: 'http', port: 8080 }])));
  }
  const apps = adminConfig().makeApiClient(AppsV1Api);
  await waitFor('imc-dispatcher and pingsource-mt-adapter Available', async () => {
    for (const name of ['imc-dispatcher', 'pingsource-mt-adapter']) {
      const d = await apps.readNamespacedDeployment({ namespace: SYSTEM_NAMESPACE, name });
      const conds = d.status?.conditions ?? [];
      if (!conds.some((c) => c.type === 'Available' && c.status === 'True')) return undefined;
    }
    return true;
  }, { timeoutMs: 60000, intervalMs: 250 });
}

/**
 * What cert-manager would write for Eventing's transport encryption: one
 * serving certificate per data-plane server, in the Secret that server (and
 * the reconciler publishing its CA) reads.
 */
async function issueServingCertificates(issuer: Issuer): Promise<void> {
  const names = (host: string): string[] => [host, host.replace(/\.cluster\.local$/, '')];
  const secrets: [string, string[], string[]][] = [
    ['mt-broker-ingress-server-tls', names(INGRESS_HOST), ['127.0.0.1']],
    ['mt-broker-filter-server-tls', names(FILTER_HOST), []],
    // The channels' names: one wildcard per namespace is not possible, so the
    // dispatcher's is for its own Service (the https channel address is not
    // used in permissive mode; the reconciler only publishes its CA).
    ['imc-dispatcher-server-tls', names(`imc-dispatcher.${SYSTEM_NAMESPACE}.svc.cluster.local`), []],
  ];
  for (const [name, dns, ips] of secrets) await applyManifest(objectManifest(issuer.tlsSecret(name, SYSTEM_NAMESPACE, issuer.issue(dns, ips))));
}

function deployment(name: string, container: string, replicas: number, strategy?: Record<string, unknown>): Record<string, unknown> {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: SYSTEM_NAMESPACE },
    spec: { replicas, ...(strategy ? { strategy } : {}), selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: container, image: `local/${name}` }] } } },
  };
}

/**
 * The PingSource reconciler marks a PingSource Ready only when the adapter
 * Deployment has no unavailable replica, i.e. its Pod runs. Here the adapter
 * runs as a process (mtping), so its Pod is reported the way a scheduler and
 * a kubelet would: bound to a node and Ready. The Pod exists only so that the
 * Deployment tells the truth: the adapter is running.
 */
async function reportPingAdapterPodsReady(): Promise<void> {
  const core = adminConfig().makeApiClient(CoreV1Api);
  const apps = adminConfig().makeApiClient(AppsV1Api);
  await waitFor('pingsource-mt-adapter Deployment with no unavailable replica', async () => {
    const pods = await core.listNamespacedPod({ namespace: SYSTEM_NAMESPACE, labelSelector: 'app=pingsource-mt-adapter' });
    for (const pod of pods.items) {
      const name = pod.metadata?.name ?? '';
      if (pod.metadata?.deletionTimestamp) continue;
      if (!pod.spec?.nodeName) await core.createNamespacedPodBinding({ namespace: SYSTEM_NAMESPACE, name, body: { metadata: { name }, target: { kind: 'Node', name: 'local' } } });
      if (!pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) {
        const now = new Date();
        const conditions = ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({ type, status: 'True', lastTransitionTime: now }));
        await core.patchNamespacedPodStatus({ namespace: SYSTEM_NAMESPACE, name, body: [{ op: 'add', path: '/status', value: { phase: 'Running', conditions, startTime: now } }] });
      }
    }
    const d = await apps.readNamespacedDeployment({ namespace: SYSTEM_NAMESPACE, name: 'pingsource-mt-adapter' });
    const replicas = d.spec?.replicas ?? 0;
    return replicas > 0 && (d.status?.availableReplicas ?? 0) >= replicas && !d.status?.unavailableReplicas ? true : undefined;
  }, { timeoutMs: 60000, intervalMs: 500 });
}

// --- Processes.

function goEnv(extra: Record<string, string>): Record<string, string> {
  return {
    SYSTEM_NAMESPACE,
    // Each process would otherwise serve profiling on the same fixed port.
    PROFILING_PORT: '0',
    POD_NAME: 'local',
    ...extra,
  };
}

/**
 * Starts the data plane; `stop()` stops every process it started, also when
 * starting failed half-way (the caller's afterAll calls it). `observability`:
 * keys of Knative's config-observability (tracing-protocol, tracing-endpoint,
 * ...) the processes start with.
 */
export async function startEventing(opts: { lockTimeoutMs?: number; oidc?: boolean; tls?: Issuer; observability?: Record<string, string> } = {}): Promise<EventingPlane> {
  const oidc = opts.oidc ?? false;
  const tls = opts.tls;
  const assets = await ensureKnativeAssets();
  const info = clusterInfo();
  // In argv, so the control plane's leftover check (processes naming the
  // state directory) covers these processes too.
  const kubeconfigArg = `--kubeconfig=${info.adminKubeconfig}`;
  const started: GoProcess[] = [];
  let proxy: ClusterDnsProxy | undefined;
  let release: (() => void) | undefined;
  let ping: GoProcess | undefined;
  const stop = async (): Promise<void> => {
    await ping?.stop();
    for (const p of [...started].reverse()) await p.stop();
    await proxy?.close();
    release?.();
    // For a post-mortem: EVENTING_LOG_DIR=<dir> keeps every process's output
    // and the proxy's request log.
    const dir = process.env.EVENTING_LOG_DIR;
    if (dir) {
      mkdirSync(dir, { recursive: true });
      for (const p of [...started, ...(ping ? [ping] : [])]) writeFileSync(join(dir, `${p.name}.log`), p.output());
      if (proxy) writeFileSync(join(dir, 'proxy.jsonl'), proxy.requests.map((r) => JSON.stringify(r)).join('\n'));
    }
  };
  try {
    await installEventingObjects(assets, { oidc, transportEncryption: tls !== undefined, observability: opts.observability ?? {} });
    if (tls) await issueServingCertificates(tls);
    release = await takeDispatcherLock(opts.lockTimeoutMs ?? 20 * 60 * 1000);
    // The dispatcher only logs a failed bind and carries on, dead. Other
    // Knative adapters (the ApiServerSource adapter of another test run, say)
    // hold :8080 briefly for their health probe: wait for it to be free.
    for (const port of DISPATCHER_PORTS) {
      await waitFor(`port ${port} to be free: the in-memory channel dispatcher needs it (hard-coded upstream); stop whatever listens there`, async () => ((await portFree(port)) ? true : undefined), { timeoutMs: 120000, intervalMs: 500 });
    }
    const ingressPort = await freePort();
    const filterPort = await freePort();
    const ingressHttpsPort = await freePort();
    const filterHttpsPort = await freePort();
    const apiServerPort = Number(new URL(info.server).port);
    const tlsTunnels: Record<string, number> = tls ? { [`${INGRESS_HOST}:443`]: ingressHttpsPort, [`${FILTER_HOST}:443`]: filterHttpsPort } : {};
    proxy = await startClusterDnsProxy({ hosts: { [INGRESS_HOST]: ingressPort, [FILTER_HOST]: filterPort }, fallback: DISPATCHER_PORTS[0], tunnels: { [API_SERVER_HOST]: apiServerPort, ...tlsTunnels } });
    // Go's transport does TLS itself on a proxied connection, with the
    // system's roots, bypassing the dialer Eventing gives a client for an
    // https address with its CA: through the proxy, the dispatcher would not
    // trust the filter. So the processes trust the issuer's CA as a system
    // root (SSL_CERT_FILE), as a cluster-wide trust bundle would have them do.
    const caFile = tls ? join(mkdtempSync(join(tmpdir(), 'meridio2-eventing-ca-')), 'ca.crt') : undefined;
    if (tls && caFile) writeFileSync(caFile, tls.caPem);
    const proxyEnv = { HTTP_PROXY: proxy.url, http_proxy: proxy.url, ...(oidc || tls ? { HTTPS_PROXY: proxy.url, https_proxy: proxy.url } : {}), ...(caFile ? { SSL_CERT_FILE: caFile } : {}) };
    const spawnGo = (name: string, bin: string, env: Record<string, string>, args: string[] = []): GoProcess => {
      const p = startGoProcess(name, bin, [kubeconfigArg, ...args], goEnv({ CONTAINER_NAME: name, ...proxyEnv, ...env }));
      started.push(p);
      return p;
    };
    // No NAMESPACE for the dispatcher: with it, it serves only the
    // namespace-scoped channels of that namespace.
    const dispatcher = spawnGo('imc-dispatcher', assets.eventing.dispatcher, { MAX_IDLE_CONNS: '1000', MAX_IDLE_CONNS_PER_HOST: '100' });
    const ingress = spawnGo('broker-ingress', assets.eventing.ingress, { INGRESS_PORT: String(ingressPort), INGRESS_PORT_HTTPS: String(ingressHttpsPort) });
    const filter = spawnGo('broker-filter', assets.eventing.filter, { NAMESPACE: SYSTEM_NAMESPACE, FILTER_PORT: String(filterPort), FILTER_PORT_HTTPS: String(filterHttpsPort) });
    const controllers = spawnGo('eventing-controllers', assets.eventing.controllers, {
      // Read by the reconcilers at start; nothing here runs these images.
      DISPATCHER_IMAGE: 'local/imc-dispatcher',
      APISERVER_RA_IMAGE: 'local/apiserver-receive-adapter',
      AUTH_PROXY_IMAGE: 'local/auth-proxy',
      WEBHOOK_NAME: 'eventing-webhook',
      WEBHOOK_PORT: '8443',
    }, ['--disable-ha']);
    for (const [p, port] of [[dispatcher, DISPATCHER_PORTS[0]], [ingress, ingressPort], [filter, filterPort], ...(tls ? [[ingress, ingressHttpsPort], [filter, filterHttpsPort]] as const : [])] as const) {
      await waitFor(`${p.name} to listen on ${port}`, async () => {
        if (!p.alive()) throw new Error(`${p.name} exited: ${tail(p)}`);
        return (await accepts(port as number)) ? true : undefined;
      }, { timeoutMs: 60000, intervalMs: 100 });
    }
    return {
      assets,
      proxy,
      ingress,
      filter,
      dispatcher,
      controllers,
      proxyEnv,
      oidc,
      ...(tls ? { ingressHttps: { port: ingressHttpsPort, caPem: tls.caPem } } : {}),
      startPing: async () => {
        if (ping?.alive()) throw new Error('the PingSource adapter is already running');
        ping = startGoProcess('pingsource-mt-adapter', assets.eventing.mtping, [kubeconfigArg], goEnv({
          CONTAINER_NAME: 'dispatcher',
          NAMESPACE: SYSTEM_NAMESPACE,
          ...proxyEnv,
          K_LOGGING_CONFIG: JSON.stringify({ 'zap-logger-config': JSON.stringify({ level: 'info', encoding: 'json', outputPaths: ['stdout'], errorOutputPaths: ['stderr'] }) }),
          K_LEADER_ELECTION_CONFIG: '',
          K_OBSERVABILITY_CONFIG: '{}',
          // Upstream delays its own shutdown towards the next minute; a test
          // that stops it wants it gone now.
          K_NO_SHUTDOWN_AFTER: '0',
          K_SINK_TIMEOUT: '-1',
        }));
        await reportPingAdapterPodsReady();
        return ping;
      },
      stopPing: async () => {
        await ping?.stop();
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
