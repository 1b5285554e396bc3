// One control plane per jest run, shared by every test file; tests isolate
// themselves by namespace. The connection details travel through the
// environment so that worker processes can read them too.
//
// Plain JavaScript over the compiled harness (dist/, built by `npm test`
// before jest starts): jest loads global setup files outside its transform.
import { ControlPlane } from '../dist/tools/controlplane/control-plane.js';

export default async function globalSetup() {
  const started = Date.now();
  const cp = await ControlPlane.start();
  globalThis.__MERIDIO_CP__ = cp;
  process.env.MERIDIO_TEST_CLUSTER = cp.info.stateDir;
  process.env.MERIDIO_TEST_CP_START_MS = String(Date.now() - started);
}
