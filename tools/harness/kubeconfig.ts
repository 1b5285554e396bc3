import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, CoreV1Api, KubeConfig, type User } from '@kubernetes/client-node';
import { AuditLog } from '../controlplane/audit-log.js';
import type { ClusterInfo } from '../controlplane/control-plane.js';

// Credentials for a control plane started by tools/controlplane: the admin's
// client certificate, or a bearer token (a ServiceAccount's), as a KubeConfig
// for this process and as a file for a process we start; and its audit log.

export function kubeConfigFor(info: ClusterInfo, user: User): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'local', server: info.server, caData: readFileSync(info.caCert).toString('base64'), skipTLSVerify: false }],
    users: [user],
    contexts: [{ name: 'local', cluster: 'local', user: user.name }],
    currentContext: 'local',
  });
  return kc;
}

export function adminKubeConfig(info: ClusterInfo): KubeConfig {
  return kubeConfigFor(info, {
    name: 'admin',
    certData: readFileSync(info.admin.cert).toString('base64'),
    keyData: readFileSync(info.admin.key).toString('base64'),
  });
}

function currentCluster(kc: KubeConfig): { server: string; caData?: string; caFile?: string } {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  return { server: cluster.server, ...(cluster.caData ? { caData: cluster.caData } : {}), ...(cluster.caFile ? { caFile: cluster.caFile } : {}) };
}

/** The cluster of `from`, authenticating with `token`. */
export function tokenKubeConfig(from: KubeConfig, token: string, name = 'token'): KubeConfig {
  const { server, caData, caFile } = currentCluster(from);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'local', server, ...(caData ? { caData } : {}), ...(caFile ? { caFile } : {}), skipTLSVerify: false }],
    users: [{ name, token }],
    contexts: [{ name: 'local', cluster: 'local', user: name }],
    currentContext: 'local',
  });
  return kc;
}

/** The same as a kubeconfig file (in a fresh temporary directory), for KUBECONFIG of a process we start. */
export function writeTokenKubeconfig(from: KubeConfig, token: string): string {
  const { server, caData, caFile } = currentCluster(from);
  const path = join(mkdtempSync(join(tmpdir(), 'meridio2-kc-')), 'kubeconfig');
  writeFileSync(path, JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster: { server, ...(caData ? { 'certificate-authority-data': caData } : {}), ...(caFile ? { 'certificate-authority': caFile } : {}) } }],
    users: [{ name: 'token', user: { token } }],
    contexts: [{ name: 'local', context: { cluster: 'local', user: 'token' } }],
    'current-context': 'local',
  }));
  return path;
}

/** The audit log of a control plane of ours, with barrier requests sent as `admin`: a GET of a ConfigMap with a unique name, answered 404 and audited. */
export function adminAuditLog(info: ClusterInfo, admin: KubeConfig): AuditLog {
  const core = admin.makeApiClient(CoreV1Api);
  return new AuditLog(info.auditLog, async (marker) => {
    try {
      await core.readNamespacedConfigMap({ namespace: 'default', name: marker });
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 404)) throw err;
    }
  });
}
