import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError, loadConfig, type Config } from '../../functions/config.js';

// Configuration of `npm start` (dev mode): the function's own settings, as in
// production, plus the few that only make sense locally. Parsed once with zod,
// so a bad value stops the start with the variable named.

/** Unset and empty are the same thing for a shell user. */
const optionalNumber = (schema: z.ZodNumber) =>
  z.preprocess((v) => (v === '' || v === undefined ? undefined : Number(v)), schema.optional());

const DevEnvSchema = z.object({
  /** 0 picks a free port (tests run several at once); unset: see DevSettings.port. */
  PORT: optionalNumber(z.number().int().min(0).max(65535)),
  /** Period of the local stand-in for the PingSource resync. */
  RESYNC_INTERVAL_SECONDS: optionalNumber(z.number().min(1).max(86400)).transform((v) => v ?? 30),
});

export interface DevSettings {
  /**
   * The port to listen on; 0 means "any free one"; undefined (PORT unset):
   * any free one with the embedded control plane, where nobody but the dev
   * tool talks to the function, and 8080 against a cluster.
   */
  port: number | undefined;
  resyncIntervalMs: number;
  /** The function's configuration, with PORT and K_SINK still to be settled by the caller. */
  function: Config;
}

export function loadDevSettings(env: NodeJS.ProcessEnv, root: string): DevSettings {
  const r = DevEnvSchema.safeParse(env);
  if (!r.success) {
    throw new ConfigError(`invalid configuration: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  // PORT is settled here (0 is allowed in dev mode, not by the function's
  // schema); warn keeps the function's per-event logs from burying the table.
  const rest = { ...env };
  delete rest.PORT;
  // The template is found from the checkout, so `npm start` works from any directory.
  const fn = loadConfig({
    ...rest,
    LOG_LEVEL: env.LOG_LEVEL || 'warn',
    TEMPLATE_PATH: env.TEMPLATE_PATH || join(root, 'infra', 'templates', 'lb-deployment.yaml'),
  });
  return { port: r.data.PORT, resyncIntervalMs: r.data.RESYNC_INTERVAL_SECONDS * 1000, function: fn };
}

/** How loadFromDefault would find a cluster: $KUBECONFIG, ~/.kube/config, or in-cluster. */
export function clusterConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.KUBECONFIG) || existsSync(join(homedir(), '.kube', 'config')) || Boolean(env.KUBERNETES_SERVICE_HOST);
}
