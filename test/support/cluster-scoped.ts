// Cluster-scoped objects a test made (GatewayClasses, ClusterRoleBindings):
// deleting the test's namespace does not remove them, and left behind they
// would be listed by every later test's resync and class reconcile on the
// shared control plane. test/support/delete-cluster-scoped.ts deletes them at
// the root of every test file, so after the file's own hooks have stopped
// whatever still uses them (a function process with the binding's rights).

const registered: { what: string; remove: () => Promise<unknown>; inTest: boolean }[] = [];

/** Deletes `what` after the current test, or after the file when registered from a beforeAll. */
export function deleteAfterTest(what: string, remove: () => Promise<unknown>): void {
  registered.push({ what, remove, inTest: expect.getState().currentTestName !== undefined });
}

/** Deletes what was registered (only the current test's with `testOnly`), newest first; a 404 means it is gone already. */
export async function deleteClusterScoped(opts: { testOnly?: boolean } = {}): Promise<void> {
  const due = registered.filter((o) => !opts.testOnly || o.inTest);
  for (const o of due) registered.splice(registered.indexOf(o), 1);
  const failures: string[] = [];
  for (let o = due.pop(); o; o = due.pop()) {
    try {
      await o.remove();
    } catch (err) {
      if ((err as { code?: unknown }).code !== 404) failures.push(`${o.what}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (failures.length > 0) throw new Error(`cluster-scoped objects not deleted: ${failures.join('; ')}`);
}
