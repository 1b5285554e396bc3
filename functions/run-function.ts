import { ConfigError, loadConfig } from './config.js';
import type { PreparedTemplate } from './reconcile/template.js';
import { defaultKubeConfig, startFunction } from './start-function.js';

// What both entry points run (functions/main.ts, and the startup snapshot's
// functions/snapshot-main.ts): parse configuration (a bad value stops here,
// with the variable named), then serve until SIGTERM.

// Knative stops routing to a revision before SIGTERM; what is in flight still
// deserves to finish, within the termination grace period.
const DRAIN_MS = 25000;

export async function runFunction(options: { preparedTemplate?: PreparedTemplate } = {}): Promise<void> {
  try {
    const config = loadConfig();
    const fn = await startFunction(config, defaultKubeConfig(), options);
    for (const sig of ['SIGTERM', 'SIGINT'] as const) {
      process.once(sig, () => void fn.stop(DRAIN_MS).then(() => process.exit(0)));
    }
  } catch (err) {
    process.stderr.write(`${err instanceof ConfigError ? err.message : `startup failed: ${err instanceof Error ? err.stack : String(err)}`}\n`);
    process.exit(1);
  }
}
