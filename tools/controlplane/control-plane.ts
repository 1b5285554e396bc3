import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync, closeSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureKwok } from '../kwok/build.mjs';
import { ensureAssets, type ControlPlaneAssets } from './build.mjs';
import { freePort } from './free-port.js';
import { createPki, writeKubeconfig } from './pki.js';
import { waitFor } from './wait-for.js';
import { repoRoot } from '../harness/repo-root.js';

/**
 * What a client needs to reach a running control plane. Written to
 * `<stateDir>/cluster.json` so that other processes (jest workers, the local
 * demo, benchmarks) can connect without sharing memory.
 */
export interface ClusterInfo {
  server: string;
  caCert: string;
  admin: { cert: string; key: string };
  adminKubeconfig: string;
  auditLog: string;
  stateDir: string;
  versions: ControlPlaneAssets['versions'];
  /** Issues client certificates for other users (CN = user, O = groups). */
  pkiDir: string;
}

export interface StartOptions {
  /** Extra CRD files or directories applied after the Gateway API CRDs. */
  crds?: string[];
  /** Prints one line per milestone; defaults to stderr. */
  log?: (msg: string) => void;
  /** Start kube-controller-manager (garbage collector, deployments). Default true. */
  controllerManager?: boolean;
  /**
   * Fake Nodes, by name, on which Pods run: starts kube-scheduler and KWOK
   * (the kubelet simulator), which makes these Nodes Ready and every Pod bound
   * to them Running and Ready (readiness gates included). Default none: no
   * Pod is ever scheduled, let alone Ready, which is what most tests rely on.
   */
  fakeNodes?: string[];
  /** More kube-controller-manager controllers (e.g. the endpoints and EndpointSlice controllers Knative Serving reads). */
  extraControllers?: string[];
  /** More kube-controller-manager flags (e.g. a client rate and sync workers sized for thousands of Deployments). */
  controllerManagerArgs?: string[];
  /**
   * The API server dials admission webhooks (and aggregated APIs) at their
   * Service's endpoint address instead of its ClusterIP, which nothing
   * routes here: how a webhook run as a local process is reached.
   */
  aggregatorRouting?: boolean;
  /** More addresses the API server's serving certificate is valid for (see createPki). */
  apiServerIps?: string[];
}

/** The annotation by which KWOK knows the Nodes it plays (and only those). */
export const FAKE_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

const here = dirname(fileURLToPath(import.meta.url));

// Every request is logged at Metadata level: tests and benchmarks count API
// requests per reconcile from this log, so it must miss nothing.
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
`;

export class ControlPlane {
  private readonly children: { name: string; proc: ChildProcess }[] = [];
  private watchdog: ChildProcess | undefined;
  private stopping: Promise<void> | undefined;
  private readonly onSignal = (sig: NodeJS.Signals): void => {
    void this.stop().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  };

  readonly info: ClusterInfo;
  private readonly log: (m: string) => void;

  private constructor(info: ClusterInfo, log: (m: string) => void) {
    this.info = info;
    this.log = log;
  }

  static async start(opts: StartOptions = {}): Promise<ControlPlane> {
    const log = opts.log ?? ((m: string) => process.stderr.write(`[controlplane] ${m}\n`));
    const fakeNodes = opts.fakeNodes ?? [];
    if (fakeNodes.length > 0 && opts.controllerManager === false) throw new Error('fakeNodes need kube-controller-manager (its node-lifecycle-controller makes them schedulable)');
    const t0 = Date.now();
    const assets = await ensureAssets();
    const stateDir = mkdtempSync(join(tmpdir(), 'meridio2-cp-'));
    const pki = createPki(stateDir, opts.apiServerIps);
    const admin = pki.clientCert('admin', ['system:masters']);
    const [etcdClient, etcdPeer, apiPort] = await Promise.all([freePort(), freePort(), freePort()]);
    const server = `https://127.0.0.1:${apiPort}`;
    const adminKubeconfig = join(stateDir, 'admin.kubeconfig');
    writeKubeconfig(adminKubeconfig, server, pki.caCert, admin);
    const auditLog = join(stateDir, 'audit.log');
    writeFileSync(join(stateDir, 'audit-policy.yaml'), AUDIT_POLICY);
    const info: ClusterInfo = {
      server,
      caCert: pki.caCert,
      admin,
      adminKubeconfig,
      auditLog,
      stateDir,
      versions: assets.versions,
      pkiDir: stateDir,
    };
    const cp = new ControlPlane(info, log);
    process.once('SIGINT', cp.onSignal);
    process.once('SIGTERM', cp.onSignal);
    try {
      cp.startWatchdog();
      cp.spawn('etcd', assets.binaries.etcd, [
        '--name=default',
        `--data-dir=${join(stateDir, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
        '--unsafe-no-fsync=true',
        '--quota-backend-bytes=4294967296',
        '--log-level=warn',
      ]);
      await waitFor('etcd health', async () => ((await httpGet(`http://127.0.0.1:${etcdClient}/health`)).status === 200 ? true : undefined), { timeoutMs: 30000 });
      log(`etcd ready after ${Date.now() - t0} ms`);
      cp.spawn('kube-apiserver', assets.binaries['kube-apiserver'], [
        `--etcd-servers=http://127.0.0.1:${etcdClient}`,
        `--secure-port=${apiPort}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--cert-dir=${join(stateDir, 'apiserver-certs')}`,
        `--tls-cert-file=${pki.serverCert}`,
        `--tls-private-key-file=${pki.serverKey}`,
        `--client-ca-file=${pki.caCert}`,
        '--authorization-mode=RBAC',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${pki.saPub}`,
        `--service-account-signing-key-file=${pki.saKey}`,
        '--allow-privileged=true',
        '--disable-admission-plugins=ServiceAccount',
        `--audit-policy-file=${join(stateDir, 'audit-policy.yaml')}`,
        `--audit-log-path=${auditLog}`,
        '--audit-log-mode=blocking',
        '--audit-log-maxsize=0',
        ...(opts.aggregatorRouting ? ['--enable-aggregator-routing=true'] : []),
        '--v=0',
      ]);
      await waitFor('kube-apiserver /readyz', async () => ((await cp.adminGet('/readyz')).status === 200 ? true : undefined), { timeoutMs: 90000 });
      await waitFor('the default namespace', async () => ((await cp.adminGet('/api/v1/namespaces/default')).status === 200 ? true : undefined), { timeoutMs: 60000 });
      log(`kube-apiserver ready after ${Date.now() - t0} ms`);
      const crdFiles = [
        ...listYaml(assets.gatewayApiCrds),
        ...listYaml(assets.nadCrds),
        ...listYaml(join(repoRoot(), 'infra', 'crds')),
        ...(opts.crds ?? []).flatMap(listYaml),
      ];
      await cp.applyCrds(crdFiles);
      // Started after the CRDs are served, so the garbage collector watches
      // Gateways from its first discovery pass instead of 30 s later.
      if (opts.controllerManager !== false) {
        const controllers = ['garbage-collector-controller', 'deployment-controller', 'replicaset-controller', 'namespace-controller'];
        // The API server taints every new Node not-ready (TaintNodesByCondition);
        // this controller lifts the taint once the Node reports Ready, as in
        // a real cluster, and watches KWOK's Lease heartbeats after that.
        if (fakeNodes.length > 0) controllers.push('node-lifecycle-controller');
        controllers.push(...(opts.extraControllers ?? []));
        await cp.startKubeComponent('kube-controller-manager', assets.binaries['kube-controller-manager'], 'kcm-certs', [`--controllers=${controllers.join(',')}`, '--concurrent-gc-syncs=5', ...(opts.controllerManagerArgs ?? [])]);
      }
      if (fakeNodes.length > 0) await cp.startFakeNodes(fakeNodes, assets.binaries['kube-scheduler']);
      writeFileSync(join(stateDir, 'cluster.json'), JSON.stringify(info, null, 2));
      log(`control plane ready after ${Date.now() - t0} ms (${server}, state in ${stateDir})`);
      return cp;
    } catch (err) {
      const logs = cp.children.map((c) => `--- ${c.name} (last lines)\n${tail(join(stateDir, `${c.name}.log`), 25)}`).join('\n');
      await cp.stop();
      throw new Error(`control plane failed to start: ${err instanceof Error ? err.message : String(err)}\n${logs}`);
    }
  }

  /**
   * kube-scheduler binds Pods to Nodes; KWOK plays the kubelet of the Nodes
   * annotated as fake, moving their Pods through its Stages (collected from
   * its pinned module by tools/kwok/build.mts).
   */
  private async startFakeNodes(names: string[], scheduler: string): Promise<void> {
    const { stateDir, adminKubeconfig } = this.info;
    const kwok = await ensureKwok();
    await this.startKubeComponent('kube-scheduler', scheduler, 'scheduler-certs', []);
    const kwokPort = await freePort();
    const stages = readdirSync(kwok.stages).filter((f) => f.endsWith('.yaml')).sort().map((f) => join(kwok.stages, f));
    this.spawn('kwok', kwok.binary, [
      `--kubeconfig=${adminKubeconfig}`,
      `--manage-nodes-with-annotation-selector=${FAKE_NODE_ANNOTATION}=fake`,
      `--server-address=127.0.0.1:${kwokPort}`,
      // Heartbeats, so that the node-lifecycle-controller keeps the Nodes Ready.
      '--node-lease-duration-seconds=40',
      // Pod IPs from a range of their own: KWOK's default (10.0.0.0/24) is
      // the API server's Service range here, and a Pod IP that is also a
      // ClusterIP confuses anything that routes to either.
      '--cidr=10.244.0.0/24',
      ...stages.map((f) => `--config=${f}`),
    ], { HOME: stateDir }); // KWOK also reads ~/.kwok/kwok.yaml: not the user's here.
    await healthy('kwok', `http://127.0.0.1:${kwokPort}/healthz`);
    const { KubeConfig, CoreV1Api } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromFile(adminKubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of names) {
      await core.createNode({
        body: {
          metadata: { name, annotations: { [FAKE_NODE_ANNOTATION]: 'fake' }, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', type: 'kwok' } },
        },
      });
    }
    await waitFor('fake Nodes Ready and without taints', async () => {
      for (const name of names) {
        const node = await core.readNode({ name });
        if (!node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return undefined;
        if ((node.spec?.taints ?? []).length > 0) return undefined;
      }
      return true;
    }, { timeoutMs: 90000 });
    this.log(`kube-scheduler, kwok and ${names.length} fake Node(s) ready`);
  }

  /**
   * Every process on the machine whose command line names this control
   * plane's state directory (the components, and the watchdog while it runs).
   * Empty after stop(): the suite asserts that nothing was left behind.
   */
  leftovers(): number[] {
    return processesNaming(this.info.stateDir);
  }

  /** Processes started by this control plane that are still running. */
  pids(): number[] {
    return this.children.filter((c) => c.proc.exitCode === null && c.proc.signalCode === null).map((c) => c.proc.pid ?? 0).filter((p) => p > 0);
  }

  /** kube-controller-manager or kube-scheduler: the admin's kubeconfig, a loopback port of its own, then healthy. */
  private async startKubeComponent(name: string, bin: string, certDir: string, extra: string[]): Promise<void> {
    const { stateDir, adminKubeconfig } = this.info;
    const port = await freePort();
    this.spawn(name, bin, [
      `--kubeconfig=${adminKubeconfig}`,
      `--authentication-kubeconfig=${adminKubeconfig}`,
      `--authorization-kubeconfig=${adminKubeconfig}`,
      ...extra,
      '--leader-elect=false',
      `--secure-port=${port}`,
      '--bind-address=127.0.0.1',
      `--cert-dir=${join(stateDir, certDir)}`,
      '--v=0',
    ]);
    await healthy(name, `https://127.0.0.1:${port}/healthz`);
  }

  private spawn(name: string, bin: string, args: string[], env?: Record<string, string>): void {
    const out = openSync(join(this.info.stateDir, `${name}.log`), 'a');
    const proc = spawn(bin, args, { stdio: ['ignore', out, out], ...(env && { env: { ...process.env, ...env } }) });
    closeSync(out);
    proc.on('exit', (code, signal) => {
      if (!this.stopping) this.log(`${name} exited unexpectedly (code ${code}, signal ${signal}); see ${join(this.info.stateDir, `${name}.log`)}`);
    });
    this.children.push({ name, proc });
  }

  private startWatchdog(): void {
    const compiled = join(here, 'watchdog.mjs');
    const script = existsSync(compiled) ? compiled : join(here, 'watchdog.mts');
    this.watchdog = spawn(process.execPath, [script, String(process.pid), this.info.stateDir], { detached: true, stdio: 'ignore' });
    this.watchdog.unref();
  }

  private async applyCrds(files: string[]): Promise<void> {
    const { KubeConfig, ApiextensionsV1Api, loadAllYaml } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromFile(this.info.adminKubeconfig);
    const api = kc.makeApiClient(ApiextensionsV1Api);
    const names: string[] = [];
    for (const file of files) {
      for (const doc of loadAllYaml(readFileSync(file, 'utf8')) as Array<{ kind?: string; metadata?: { name?: string } }>) {
        if (!doc || doc.kind !== 'CustomResourceDefinition') continue;
        await api.createCustomResourceDefinition({ body: doc as never });
        names.push(doc.metadata?.name ?? '');
      }
    }
    await waitFor('CRDs established', async () => {
      for (const name of names) {
        const crd = await api.readCustomResourceDefinition({ name });
        const established = crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
        if (!established) return undefined;
      }
      return true;
    }, { timeoutMs: 60000 });
    // Established is not the same as served: wait until discovery lists every group/version.
    await waitFor('CRD discovery', async () => {
      for (const file of files) {
        for (const doc of loadAllYaml(readFileSync(file, 'utf8')) as Array<{ kind?: string; spec?: { group: string; names: { plural: string }; versions: { name: string; served: boolean }[] } }>) {
          if (!doc || doc.kind !== 'CustomResourceDefinition' || !doc.spec) continue;
          for (const v of doc.spec.versions.filter((x) => x.served)) {
            const res = await this.adminGet(`/apis/${doc.spec.group}/${v.name}`);
            if (res.status !== 200 || !res.body.includes(`"name":"${doc.spec.names.plural}"`)) return undefined;
          }
        }
      }
      return true;
    }, { timeoutMs: 60000 });
  }

  /** A GET as the admin user, for readiness probes. */
  adminGet(path: string): Promise<{ status: number; body: string }> {
    return httpGet(`${this.info.server}${path}`, {
      ca: readFileSync(this.info.caCert),
      cert: readFileSync(this.info.admin.cert),
      key: readFileSync(this.info.admin.key),
    });
  }

  /** Stops every process, waits for each to exit, and removes the state directory. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      process.removeListener('SIGINT', this.onSignal);
      process.removeListener('SIGTERM', this.onSignal);
      // Reverse start order: clients before the servers they talk to.
      for (const c of [...this.children].reverse()) {
        await stopProcess(c.proc);
      }
      if (this.watchdog && this.watchdog.exitCode === null) {
        // It was unref'd so it never kept its owner alive; while we wait for
        // it, it must, or Node could exit half-way through stop().
        this.watchdog.ref();
        const exited = new Promise<void>((r) => this.watchdog?.once('exit', () => r()));
        this.watchdog.kill('SIGTERM');
        await exited;
      }
      rmSync(this.info.stateDir, { recursive: true, force: true });
    })();
    return this.stopping;
  }
}

/** Pids of processes (other than this one) whose command line contains `text`. */
export function processesNaming(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text)) pids.push(pid);
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

function listYaml(path: string): string[] {
  if (!existsSync(path)) return [];
  if (path.endsWith('.yaml') || path.endsWith('.yml')) return [path];
  return readdirSync(path)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort()
    .map((f) => join(path, f));
}

async function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 10000);
  await exited;
  clearTimeout(timer);
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function httpGet(url: string, tls: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? request : undefined;
    const handler = (res: import('node:http').IncomingMessage): void => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    };
    if (mod) {
      // kube-controller-manager serves /healthz with a self-signed certificate it
      // generated itself; only that probe goes without verification.
      const req = mod(u, { ...tls, rejectUnauthorized: Boolean(tls.ca), timeout: 5000 }, handler);
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end();
    } else {
      void import('node:http').then(({ request: plain }) => {
        const req = plain(u, { timeout: 5000 }, handler);
        req.on('error', reject);
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.end();
      });
    }
  });
}

/** Waits until a component's /healthz answers 200. */
function healthy(name: string, url: string): Promise<true> {
  return waitFor(`${name} /healthz`, async () => ((await httpGet(url)).status === 200 ? true : undefined), { timeoutMs: 60000 });
}

/** Reads the connection info a running control plane wrote. */
export function readClusterInfo(stateDir: string): ClusterInfo {
  return JSON.parse(readFileSync(join(stateDir, 'cluster.json'), 'utf8')) as ClusterInfo;
}
