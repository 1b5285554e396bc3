import { startupSnapshot } from 'node:v8';
import { DEFAULT_TEMPLATE_PATH } from './config.js';
import { prepareTemplate } from './reconcile/template.js';
import { runFunction } from './run-function.js';

// Entry of the startup snapshot the image runs (`node --snapshot-blob
// dist/function.blob`; built by tools/bundle/build.mts, see docs/operations.md
// "Cold start"). Building the snapshot evaluates every module of the bundle
// once and saves the heap; each start then deserializes it instead of
// loading and evaluating ~2.7 MB of JavaScript.
//
// At build time only what is the same for every start happens here: module
// evaluation and parsing the default LB template. Everything that depends on
// the place the process runs in happens after deserialization, in
// runFunction(): reading the environment (configuration), reading
// TEMPLATE_PATH, the kubeconfig, the logger, the listening socket, timers and
// signal handlers. Node's HTTP modules cannot be in a snapshot: they are
// loaded on first use after deserialization, behind stand-ins that let the
// packages using them (undici, cloudevents) be evaluated into the snapshot
// all the same (tools/bundle/defer-modules.mts).

if (!startupSnapshot.isBuildingSnapshot()) {
  throw new Error('functions/snapshot-main.ts builds the startup snapshot: run it with node --build-snapshot (npm run build:bundle)');
}

const preparedTemplate = prepareTemplate(DEFAULT_TEMPLATE_PATH);
startupSnapshot.setDeserializeMainFunction(() => {
  void runFunction({ preparedTemplate });
});
