import { KubeConfig } from '@kubernetes/client-node';
import type { Config } from './config.js';
import { handleEvent } from './handle-event.js';
import { reconcileCoalescer } from './reconcile-targets.js';
import { sinkClient, trustBundles } from './dispatch/sink-client.js';
import { kubeApi } from './kube/kube-api.js';
import { loadTemplate, TemplateError, type PreparedTemplate, type Template } from './reconcile/template.js';
import { loadKubeConfig } from './kube/kubeconfig.js';
import { describeError, StartupError } from './startup-error.js';
import type { Server } from 'node:http';
import { createFunctionServer, type FunctionServer } from './server.js';
import { connectionPool, type ConnectionPool } from './kube/pooled-client.js';
import { issuerKeySource } from './sender-auth/issuer-keys.js';
import { senderVerifier, type VerifySender } from './sender-auth/sender-auth.js';
import { readSinkToken } from './sender-auth/sink-token.js';
import type { Telemetry } from './telemetry/telemetry.js';
import { startTelemetry } from './telemetry/start-telemetry.js';
import { VERSION } from './version.js';
import { functionLog } from './telemetry/function-log.js';

export interface RunningFunction extends FunctionServer {
  port: number;
  telemetry: Telemetry;
  /**
   * What SIGTERM runs (run-function.ts): drain what is in flight (at most
   * `drainMs`), then flush telemetry, then one log line with both figures.
   */
  stop(drainMs: number): Promise<void>;
}

const SERVICE_NAME = 'meridio-2-gateway-controller';

/**
 * Wires configuration, API access, template and server together and listens.
 * `preparedTemplate`: the default template parsed ahead (the startup snapshot).
 */
export async function startFunction(config: Config, kc: KubeConfig, options: { preparedTemplate?: PreparedTemplate; env?: Record<string, string | undefined> } = {}): Promise<RunningFunction> {
  const { log, joinTraces } = functionLog({ level: config.LOG_LEVEL, service: SERVICE_NAME });
  // Nothing of OpenTelemetry is loaded unless an OTLP endpoint is configured.
  // It starts after the logger (it logs its export failures); with tracing
  // on, the log lines carry the trace and span they were written in.
  const telemetry = await startTelemetry(options.env ?? process.env, { serviceName: SERVICE_NAME, instance: config.POD_NAME }, log);
  joinTraces(telemetry.logTraceFields);
  const template = templateAt(config.TEMPLATE_PATH, options.preparedTemplate);
  if (template.ignoredFields) log.warn({ templatePath: config.TEMPLATE_PATH, ignoredFields: template.ignoredFields }, 'LB template fields that are no part of a Deployment are ignored');
  // One connection pool for every API request of the process.
  const pool = connectionPool(kc, { requestTimeoutMs: config.API_REQUEST_TIMEOUT_MS, telemetry });
  // One pool to the sink for the process, trusting what the SinkBinding says to.
  const bundles = config.K_SINK?.startsWith('https:') ? trustBundles(config.TRUST_BUNDLE_DIR) : [];
  const sink = config.K_SINK ? sinkClient({ ...(config.K_CA_CERTS ? { caCerts: config.K_CA_CERTS } : {}), bundles, extensions: config.K_CE_OVERRIDES }) : undefined;
  const deps = {
    reconcile: {
      api: kubeApi(kc, { pool }),
      template,
      settings: {
        controllerName: config.CONTROLLER_NAME,
        lbServiceAccount: config.LB_SERVICE_ACCOUNT,
        rolloutBudget: config.LB_ROLLOUT_BUDGET,
        ...(config.LB_PDB_MAX_UNAVAILABLE !== undefined && { lbPodDisruptionBudget: config.LB_PDB_MAX_UNAVAILABLE }),
      },
      clock: () => new Date(),
      instance: config.POD_NAME,
      namespaces: config.WATCH_NAMESPACES,
    },
    namespaces: config.WATCH_NAMESPACES,
    sink: config.K_SINK,
    ...(sink ? { sinkClient: sink } : {}),
    sinkToken: () => readSinkToken(config.SINK_OIDC_TOKEN_FILE),
    coalescer: reconcileCoalescer(),
  };
  if (!config.K_SINK) log.warn({}, 'K_SINK is not set: events that affect several Gateways are reconciled in this process instead of fanned out');
  else if (config.K_SINK.startsWith('https:') && !config.K_CA_CERTS && bundles.length === 0) log.warn({ sink: config.K_SINK }, 'K_SINK is https without K_CA_CERTS or a trust bundle: the sink\'s certificate must be trusted by the system\'s roots');
  const senderAuth = config.SENDER_AUTH === 'off' ? undefined : { mode: config.SENDER_AUTH, verify: verifierFor(config, pool) };
  const fn = createFunctionServer({
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    log,
    ...(senderAuth ? { senderAuth } : {}),
    telemetry,
    budgetMs: config.INVOCATION_BUDGET_MS,
    handle: (incoming, invocation) => handleEvent(incoming, invocation, deps),
  });
  await listen(fn.server, config.PORT);
  const addr = fn.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
  // Since the process started: what a cold start costs an event (bench P1).
  telemetry.ready(performance.now());
  log.info({ version: VERSION, port, telemetry: telemetry.enabled, senderAuth: config.SENDER_AUTH, ...(senderAuth ? { audience: config.SENDER_AUTH_AUDIENCE, allowedSenders: config.SENDER_AUTH_ALLOWED } : {}), controllerName: config.CONTROLLER_NAME, templateHash: template.hash, namespaces: config.WATCH_NAMESPACES, ...(config.K_SINK ? { sink: config.K_SINK, sinkCaCerts: config.K_CA_CERTS !== undefined, trustBundles: bundles.length, ceOverrides: Object.keys(config.K_CE_OVERRIDES) } : {}) }, 'listening');
  const stop = async (drainMs: number): Promise<void> => {
    const started = performance.now();
    const inFlight = fn.inFlight();
    await fn.drain(drainMs);
    await sink?.close();
    const drained = performance.now();
    // What the drained invocations recorded is exported before the exit: a
    // Pod scaled to zero must not lose its last export interval.
    const flush = await telemetry.shutdown();
    log.info({ inFlight, drainMs: Math.round(drained - started), telemetry: flush, flushMs: Math.round(performance.now() - drained) }, 'stopped');
  };
  return { ...fn, port, telemetry, stop };
}

// Nothing of this is built with SENDER_AUTH off. With it on, the issuer's
// keys are read by the first token that needs them, not at start: the cold
// start stays what it is, and a token refused from its claims alone never
// waits for them.
function verifierFor(config: Config, pool: ConnectionPool): VerifySender {
  return senderVerifier({
    audience: config.SENDER_AUTH_AUDIENCE ?? '',
    senders: config.SENDER_AUTH_ALLOWED,
    keys: issuerKeySource(pool.configuration()),
  });
}

/** The kubeconfig from where client-go looks; a missing or malformed one is a StartupError naming it. */
export function defaultKubeConfig(): KubeConfig {
  return loadKubeConfig();
}

function templateAt(path: string, prepared: PreparedTemplate | undefined): Template {
  try {
    return loadTemplate(path, prepared);
  } catch (err) {
    throw new StartupError(`TEMPLATE_PATH ${path}`, err instanceof TemplateError ? err.problem : describeError(err), { cause: err });
  }
}

/** Listens on `port`; a port taken or not allowed is a StartupError naming PORT. */
function listen(server: Server, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') reject(new StartupError(`PORT ${port}`, 'is in use by another process', { cause: err }));
      else if (err.code === 'EACCES') reject(new StartupError(`PORT ${port}`, 'needs privileges this process does not have (use a port above 1023)', { cause: err }));
      else reject(err);
    });
    server.listen(port, () => resolve());
  });
}
