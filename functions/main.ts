// Production entry point of the Knative Service: parse configuration (a bad
// value stops here, with the variable named), then serve until SIGTERM.
import { ConfigError, loadConfig } from './config.js';
import { defaultKubeConfig, startFunction } from './start-function.js';

// Knative stops routing to a revision before SIGTERM; what is in flight still
// deserves to finish, within the termination grace period.
const DRAIN_MS = 25000;

try {
  const config = loadConfig();
  const fn = await startFunction(config, defaultKubeConfig());
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.once(sig, () => {
      void fn.drain(DRAIN_MS).then(() => process.exit(0));
    });
  }
} catch (err) {
  process.stderr.write(`${err instanceof ConfigError ? err.message : `startup failed: ${err instanceof Error ? err.stack : String(err)}`}\n`);
  process.exit(1);
}
