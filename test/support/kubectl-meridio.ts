import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ApiException, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { shippedRbacDocument, type ServiceAccountIdentity } from '../../tools/harness/service-account-identity.js';
import { KUBECTL_MERIDIO_ENTRY, PLUGIN_READER_RBAC_FILE, pluginReaderIdentity } from '../../tools/harness/kubectl-meridio.js';
import { repoPath } from '../../tools/harness/repo-root.js';
import { adminConfig } from './cluster.js';
import { deleteAfterTest } from './cluster-scoped.js';

// The kubectl plugin as a user runs it: the built entry
// (dist/cli/kubectl-meridio/main.js, `npm run build`) in a process of its
// own, with the kubeconfig of an identity bound to the shipped read-only
// ClusterRole only, under the RBAC authorizer.

export { PLUGIN_READER_RBAC_FILE } from '../../tools/harness/kubectl-meridio.js';

/**
 * A ServiceAccount of `namespace` bound to the plugin reader role and
 * nothing else; unbound after the test. With `controllerNamespace` (where
 * the test installs the controller's Service and template ConfigMap), the
 * shipped file's Role too, made there instead of in meridio-2-system.
 */
export async function pluginReader(namespace: string, controllerNamespace?: string): Promise<ServiceAccountIdentity> {
  const identity = await pluginReaderIdentity(adminConfig(), namespace);
  deleteAfterTest(`ClusterRoleBinding ${identity.binding}`, () => identity.dispose());
  if (controllerNamespace !== undefined) {
    const role = shippedRbacDocument(PLUGIN_READER_RBAC_FILE, 'Role');
    const name = role.metadata?.name ?? 'meridio-2-plugin-reader';
    const rbac = adminConfig().makeApiClient(RbacAuthorizationV1Api);
    // In a namespace of the test, deleted with it.
    await rbac.createNamespacedRole({ namespace: controllerNamespace, body: { ...role, metadata: { ...role.metadata, namespace: controllerNamespace } } });
    await rbac.createNamespacedRoleBinding({
      namespace: controllerNamespace,
      body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects: [{ kind: 'ServiceAccount', name: identity.serviceAccount, namespace }] },
    });
    // The authorizer learns of a binding from its informer: usable once a get answers 404 rather than 403.
    const core = identity.kc.makeApiClient(CoreV1Api);
    await waitFor(`the RoleBinding ${controllerNamespace}/${name} to take effect`, async () => {
      try {
        await core.readNamespacedConfigMap({ namespace: controllerNamespace, name: 'no-such-configmap' });
        return true;
      } catch (err) {
        if (err instanceof ApiException && (err.code === 404 || err.code === 403)) return err.code === 404;
        throw err;
      }
    });
  }
  return identity;
}

export interface PluginRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function kubectlMeridio(args: string[], kubeconfig: string): Promise<PluginRun> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [repoPath(KUBECTL_MERIDIO_ENTRY), ...args], { env: { PATH: process.env.PATH ?? '', KUBECONFIG: kubeconfig }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The table below the health line, as cells by column name (columns are two or more blanks apart). */
export function tableRows(stdout: string): Record<string, string>[] {
  const lines = stdout.split('\n').filter((l) => l.trim() !== '');
  const headerAt = lines.findIndex((l) => /^(NAMESPACE|NAME)\s{2,}/.test(l));
  if (headerAt < 0) return [];
  const header = (lines[headerAt] ?? '').split(/\s{2,}/);
  return lines.slice(headerAt + 1).map((l) => Object.fromEntries(l.split(/\s{2,}/).map((cell, i) => [header[i] ?? `#${i}`, cell])));
}
