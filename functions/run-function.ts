import { loadConfig } from './config.js';
import type { PreparedTemplate } from './reconcile/template.js';
import { defaultKubeConfig, startFunction } from './start-function.js';
import { startupFailureLine } from './startup-error.js';

// What both entry points run (functions/main.ts, and the startup snapshot's
// functions/snapshot-main.ts): parse configuration, read the kubeconfig and
// the template, listen (a bad input stops here, in one line naming it:
// startup-error.ts), then serve until SIGTERM.

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
    process.stderr.write(`${startupFailureLine(err)}\n`);
    process.exit(1);
  }
}
