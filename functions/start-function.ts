import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { Config } from './config.js';
import { handleEvent, reconcileCoalescer } from './handle-event.js';
import { kubeApi } from './kube/kube-api.js';
import { loadTemplate, type PreparedTemplate } from './reconcile/template.js';
import { createFunctionServer, type FunctionServer } from './server.js';

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
  const api = kubeApi(kc, { requestTimeoutMs: config.API_REQUEST_TIMEOUT_MS });
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
    budgetMs: config.INVOCATION_BUDGET_MS,
    coalescer: reconcileCoalescer(),
  };
  if (!config.K_SINK) log.warn({}, 'K_SINK is not set: events that affect several Gateways are reconciled in this process instead of fanned out');
  const fn = createFunctionServer({
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    log,
    handle: (incoming, event) => handleEvent(incoming, deps, event),
  });
  await new Promise<void>((resolve, reject) => {
    fn.server.once('error', reject);
    fn.server.listen(config.PORT, () => resolve());
  });
  const addr = fn.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
  log.info({ port, controllerName: config.CONTROLLER_NAME, templateHash: template.hash, namespaces: config.WATCH_NAMESPACES }, 'listening');
  return { ...fn, port };
}

export function defaultKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}
