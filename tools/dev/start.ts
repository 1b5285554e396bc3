// `npm start`: the controller doing its job on this machine (dev mode).
//
// - A cluster is configured ($KUBECONFIG, ~/.kube/config or in-cluster):
//   serve the function against it.
// - None: start the embedded control plane, install the controller's RBAC,
//   apply infra/samples, and run the function as its ServiceAccount.
//
// Either way a local stand-in for Knative's ApiServerSource and PingSource
// delivers CloudEvents to the function, whose K_SINK points back at itself
// (a valid Knative wiring without a Broker), and a live status table is
// printed on stdout whenever it changes. Everything else goes to stderr.
import { pino } from 'pino';
import { VersionApi, type KubeConfig } from '@kubernetes/client-node';
import { describeError, StartupError, startupFailureLine } from '../../functions/startup-error.js';
import { defaultKubeConfig, startFunction } from '../../functions/start-function.js';
import { ControlPlane } from '../controlplane/control-plane.js';
import { bindable, freePort } from '../controlplane/free-port.js';
import { repoRoot } from '../harness/repo-root.js';
import { clusterConfigured, loadDevSettings } from './dev-settings.js';
import { adminKubeConfig } from '../harness/kubeconfig.js';
import { CONTROLLER_SERVICE_ACCOUNT, EVENT_SOURCE_SERVICE_ACCOUNT } from '../harness/service-account-identity.js';
import { CONTROLLER_NAMESPACE, applySamples, installControllerIdentity, installEventSourceIdentity } from './embedded-cluster.js';
import { startLocalEventSource } from './local-event-source.js';
import { startStatusPrinter } from './status-printer.js';

// stdout carries the table and nothing else, so it can be read (or piped)
// as-is. The function's pino logger writes to fd 1 unless process.stdout.write
// has been replaced, in which case it writes through the replacement; so the
// real stdout is kept for the table and everything else is sent to stderr.
const writeTable = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;

const notice = (msg: string): void => {
  process.stderr.write(`[dev] ${msg}\n`);
};

/** In a dev loop nobody waits 25 s as Knative would; in-flight reconciles get this long. */
const DRAIN_MS = 5000;
/** If shutting down hangs, leave anyway; the control plane's watchdog reaps what is left. */
const SHUTDOWN_DEADLINE_MS = 60000;
const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

// What has been started, stopped in reverse order on the way out.
const cleanups: { what: string; stop: () => Promise<void> }[] = [];
let exiting: Promise<void> | undefined;

function shutdown(code: number): Promise<void> {
  exiting ??= (async () => {
    // Deliberately not unref'd: it also keeps the event loop alive while the
    // control plane waits for its (unref'd) watchdog to exit, which would
    // otherwise end the process early, leaving the state directory behind.
    setTimeout(() => {
      notice(`shutdown took longer than ${SHUTDOWN_DEADLINE_MS} ms; exiting anyway`);
      process.exit(code || 1);
    }, SHUTDOWN_DEADLINE_MS);
    for (const c of cleanups.reverse()) {
      try {
        await c.stop();
      } catch (err) {
        notice(`stopping ${c.what} failed: ${err instanceof Error ? err.message : String(err)}`);
        code ||= 1;
      }
    }
    process.exit(code);
  })();
  return exiting;
}

function onSignal(sig: NodeJS.Signals): void {
  if (exiting) return;
  notice(`${sig}: stopping`);
  void shutdown(0);
}

/**
 * ControlPlane.start installs its own SIGINT/SIGTERM handlers, which stop it
 * and exit 130/143. Once it is up, this process owns the order of shutdown
 * (source, then function, then control plane) and exits 0: replace them.
 */
function takeOverSignals(before: Map<NodeJS.Signals, NodeJS.SignalsListener[]>): void {
  for (const sig of SIGNALS) {
    const known = before.get(sig) ?? [];
    for (const l of process.listeners(sig)) {
      if (!known.includes(l)) process.removeListener(sig, l);
    }
    process.on(sig, onSignal);
  }
}

async function embeddedCluster(root: string): Promise<{ functionKc: KubeConfig; watchKc: KubeConfig }> {
  notice('no cluster configured ($KUBECONFIG unset, no ~/.kube/config, not in a cluster): starting an embedded control plane');
  notice('the first run builds it from Go modules (several minutes); later runs use the cache');
  const before = new Map(SIGNALS.map((s) => [s, process.listeners(s)] as const));
  const cp = await ControlPlane.start({ log: (m) => notice(`controlplane: ${m}`) });
  cleanups.push({ what: 'the embedded control plane', stop: () => cp.stop() });
  takeOverSignals(before);
  notice(`embedded control plane state: ${cp.info.stateDir}`);
  const admin = adminKubeConfig(cp.info);
  const functionKc = await installControllerIdentity(admin);
  const watchKc = await installEventSourceIdentity(admin);
  notice(`the function runs as ServiceAccount ${CONTROLLER_NAMESPACE}/${CONTROLLER_SERVICE_ACCOUNT} (infra/rbac), the event source as ${CONTROLLER_NAMESPACE}/${EVENT_SOURCE_SERVICE_ACCOUNT} (infra/knative)`);
  const applied = await applySamples(admin, root);
  notice(`applied infra/samples: ${applied.join(', ')}`);
  notice(`kubectl works against it: export KUBECONFIG=${cp.info.adminKubeconfig}`);
  return { functionKc, watchKc };
}

/** Against a cluster, with PORT unset: what `npm start` has always served on. */
const DEFAULT_PORT = 8080;

const portInUse = (port: number): StartupError => new StartupError(`PORT ${port}`, 'is in use: set PORT to a free port (PORT=0 picks any free one)');

/** K_SINK must be known before the server starts, so "any port" (0) is settled here; a port in use stops the start. */
async function listeningPort(wanted: number): Promise<number> {
  if (wanted === 0) return freePort();
  if (!(await bindable(wanted))) throw portInUse(wanted);
  return wanted;
}

/** Before anything starts: an API server that does not answer is one line naming it, not a watch failing later. */
async function apiServerReachable(kc: KubeConfig): Promise<void> {
  const server = kc.getCurrentCluster()?.server ?? 'the configured cluster';
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('no answer within 10 s')), 10000); });
  try {
    await Promise.race([kc.makeApiClient(VersionApi).getCode(), timedOut]);
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    throw new StartupError(`API server ${server} (context ${kc.getCurrentContext()})`, `unreachable: ${describeError(cause ?? err)}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}

async function main(): Promise<void> {
  const root = repoRoot();
  const settings = loadDevSettings(process.env, root);
  const config = settings.function;
  const log = pino({ level: config.LOG_LEVEL, base: { component: 'dev' } }, pino.destination(2));

  // Settled before anything is set up, so that a port in use is one line
  // and not a stack trace after the control plane has started.
  const embedded = !clusterConfigured();
  const port = await listeningPort(settings.port ?? (embedded ? 0 : DEFAULT_PORT));

  let kcs: { functionKc: KubeConfig; watchKc: KubeConfig };
  if (!embedded) {
    for (const sig of SIGNALS) process.on(sig, onSignal);
    const kc = defaultKubeConfig();
    await apiServerReachable(kc);
    notice(`cluster mode: serving the function against ${kc.getCurrentCluster()?.server ?? 'the configured cluster'} (context ${kc.getCurrentContext()})`);
    kcs = { functionKc: kc, watchKc: kc };
  } else {
    kcs = await embeddedCluster(root);
  }

  const self = `http://127.0.0.1:${port}/`;
  const fn = await startFunction({ ...config, PORT: port, K_SINK: config.K_SINK ?? self }, kcs.functionKc).catch((err: unknown) => {
    // Taken between the check above and now.
    if ((err as { code?: string }).code === 'EADDRINUSE') throw portInUse(port);
    throw err;
  });
  cleanups.push({ what: 'the function', stop: () => fn.stop(DRAIN_MS) });
  notice(`function listening on ${self} (K_SINK ${config.K_SINK ?? 'is the function itself'}; logs at level ${config.LOG_LEVEL}, set LOG_LEVEL to change)`);

  const source = await startLocalEventSource({
    kc: kcs.watchKc,
    sink: self,
    namespaces: config.WATCH_NAMESPACES,
    resyncIntervalMs: settings.resyncIntervalMs,
    log,
  });
  cleanups.push({ what: 'the local event source', stop: () => source.stop() });
  notice(`dev mode: a local stand-in for ApiServerSource delivers watch events, and a resync ping every ${settings.resyncIntervalMs / 1000} s; in a cluster, Knative does both`);

  const printer = startStatusPrinter({
    kc: kcs.watchKc,
    controllerName: config.CONTROLLER_NAME,
    namespaces: config.WATCH_NAMESPACES,
    write: (text) => {
      writeTable(text);
    },
    warn: (obj, msg) => log.warn(obj, msg),
  });
  cleanups.push({ what: 'the status table', stop: () => printer.stop() });
  notice('the table below is printed again whenever it changes; Ctrl-C stops everything');
}

try {
  await main();
} catch (err) {
  notice(startupFailureLine(err));
  await shutdown(1);
}
