import { KubeConfig, type Configuration } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { Config } from './config.js';
import { handleEvent, reconcileCoalescer } from './handle-event.js';
import { kubeApi } from './kube/kube-api.js';
import { loadTemplate, type PreparedTemplate } from './reconcile/template.js';
import { createFunctionServer, type FunctionServer } from './server.js';
import { pooledConfiguration } from './kube/pooled-client.js';
import { issuerKeySource } from './sender-auth/issuer-keys.js';
import { senderVerifier, type VerifySender } from './sender-auth/sender-auth.js';
import { readSinkToken } from './sender-auth/sink-token.js';

export interface RunningFunction extends FunctionServer {
  port: number;
}

/**
 * Wires configuration, API access, template and server together and listens.
 * `preparedTemplate`: the default template parsed ahead (the startup snapshot).
 */
export async function startFunction(config: Config, kc: KubeConfig, options: { preparedTemplate?: PreparedTemplate } = {}): Promise<RunningFunction> {
  const log = pino({ level: config.LOG_LEVEL, base: { fn: 'meridio-2-gateway-controller' } });
  const template = loadTemplate(config.TEMPLATE_PATH, options.preparedTemplate);
  if (template.ignoredFields) log.warn({ templatePath: config.TEMPLATE_PATH, ignoredFields: template.ignoredFields }, 'LB template fields that are no part of a Deployment are ignored');
  // One connection pool for every API request of the process.
  const configuration = pooledConfiguration(kc, { requestTimeoutMs: config.API_REQUEST_TIMEOUT_MS });
  const api = kubeApi(kc, { configuration });
  const deps = {
    api,
    reconcile: {
      api,
      template,
      settings: { controllerName: config.CONTROLLER_NAME, lbServiceAccount: config.LB_SERVICE_ACCOUNT },
      clock: () => new Date(),
      instance: config.POD_NAME,
    },
    scope: { controllerName: config.CONTROLLER_NAME, namespaces: config.WATCH_NAMESPACES },
    sink: config.K_SINK,
    sinkToken: () => readSinkToken(config.SINK_OIDC_TOKEN_FILE),
    budgetMs: config.INVOCATION_BUDGET_MS,
    coalescer: reconcileCoalescer(),
  };
  if (!config.K_SINK) log.warn({}, 'K_SINK is not set: events that affect several Gateways are reconciled in this process instead of fanned out');
  const senderAuth = config.SENDER_AUTH === 'off' ? undefined : { mode: config.SENDER_AUTH, verify: verifierFor(config, configuration) };
  const fn = createFunctionServer({
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    log,
    ...(senderAuth ? { senderAuth } : {}),
    handle: (incoming, event) => handleEvent(incoming, deps, event),
  });
  await new Promise<void>((resolve, reject) => {
    fn.server.once('error', reject);
    fn.server.listen(config.PORT, () => resolve());
  });
  const addr = fn.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
  log.info({ port, senderAuth: config.SENDER_AUTH, ...(senderAuth ? { audience: config.SENDER_AUTH_AUDIENCE, allowedSenders: config.SENDER_AUTH_ALLOWED } : {}), controllerName: config.CONTROLLER_NAME, templateHash: template.hash, namespaces: config.WATCH_NAMESPACES }, 'listening');
  return { ...fn, port };
}

// Nothing of this is built with SENDER_AUTH off. With it on, the issuer's
// keys are read by the first token that needs them, not at start: the cold
// start stays what it is, and a token refused from its claims alone never
// waits for them.
function verifierFor(config: Config, configuration: Configuration): VerifySender {
  return senderVerifier({
    audience: config.SENDER_AUTH_AUDIENCE ?? '',
    senders: config.SENDER_AUTH_ALLOWED,
    keys: issuerKeySource(configuration),
  });
}

export function defaultKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}
