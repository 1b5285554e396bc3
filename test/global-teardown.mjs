import { stopBackgroundBuild } from '../tools/assets.mts';

export default async function globalTeardown() {
  // `npm test` on a cold machine builds some tools beside the tests
  // (tools/assets.mts); a run of a few test files may end before it does.
  const stopped = stopBackgroundBuild();
  if (stopped !== undefined) process.stderr.write(`[assets] stopped the background build (pid ${stopped}): the test files run did not need it\n`);
  const cp = globalThis.__MERIDIO_CP__;
  if (!cp) return;
  await cp.stop();
  // The suite's own guarantee that `npm test` leaves no process behind.
  const left = cp.leftovers();
  if (left.length > 0) {
    throw new Error(`processes left behind after the control plane stopped: ${left.join(', ')}`);
  }
  process.stderr.write(`[controlplane] stopped; no process left behind (start took ${process.env.MERIDIO_TEST_CP_START_MS} ms)\n`);
}
