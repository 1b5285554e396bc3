import { randomBytes } from 'node:crypto';
import { ApiException, AuthenticationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { AuditLog } from '../../tools/controlplane/audit-log.js';
import { readClusterInfo, type ClusterInfo } from '../../tools/controlplane/control-plane.js';
import { adminAuditLog, adminKubeConfig, tokenKubeConfig } from '../../tools/harness/kubeconfig.js';
import { serviceAccountToken } from '../../tools/harness/service-account-identity.js';

// Access to the shared test control plane (started by test/global-setup.ts).

let cached: ClusterInfo | undefined;
let audit: AuditLog | undefined;

/**
 * Points every helper of this test file at another control plane than the
 * shared one (one that a test started for itself, with options the shared
 * one must not have). Jest gives each test file its own module registry, so
 * other files keep the shared control plane.
 */
export function useClusterInfo(info: ClusterInfo): void {
  cached = info;
  audit = undefined;
}

export function clusterInfo(): ClusterInfo {
  if (cached) return cached;
  const dir = process.env.MERIDIO_TEST_CLUSTER;
  if (!dir) throw new Error('MERIDIO_TEST_CLUSTER is not set: run the tests through jest, whose globalSetup starts the control plane');
  cached = readClusterInfo(dir);
  return cached;
}

export function adminConfig(): KubeConfig {
  return adminKubeConfig(clusterInfo());
}

/** A kubeconfig that authenticates with a bearer token (e.g. a ServiceAccount's). */
export function tokenConfig(token: string): KubeConfig {
  return tokenKubeConfig(adminConfig(), token);
}

/**
 * Creates the ServiceAccount if needed and returns a kubeconfig that
 * authenticates as it with a real token issued by the API server (TokenRequest).
 */
export async function serviceAccountConfig(namespace: string, name: string): Promise<{ kc: KubeConfig; username: string }> {
  const token = await serviceAccountToken(adminConfig(), namespace, name);
  return { kc: tokenConfig(token), username: `system:serviceaccount:${namespace}:${name}` };
}

/** The username the API server sees for a kubeconfig (SelfSubjectReview). */
export async function whoAmI(kc: KubeConfig): Promise<string> {
  const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
  return review.status?.userInfo?.username ?? '';
}

export async function createNamespace(prefix = 't'): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await adminConfig().makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

export async function deleteNamespace(name: string): Promise<void> {
  try {
    await adminConfig().makeApiClient(CoreV1Api).deleteNamespace({ name });
  } catch (err) {
    if (!(err instanceof ApiException && err.code === 404)) throw err;
  }
}

/**
 * Gives each test its own namespace: created before, deleted after.
 * Returns a getter because the name is only known once beforeEach ran.
 */
export function useNamespace(prefix = 't'): () => string {
  let ns: string | undefined;
  beforeEach(async () => {
    ns = await createNamespace(prefix);
  });
  afterEach(async () => {
    if (ns) await deleteNamespace(ns);
  });
  return () => {
    if (!ns) throw new Error('namespace not created yet');
    return ns;
  };
}

/** The audit log of the shared control plane, with barriers sent as the admin. */
export function auditLog(): AuditLog {
  if (audit) return audit;
  audit = adminAuditLog(clusterInfo(), adminConfig());
  return audit;
}

/** The HTTP status of a failed API call, or undefined when it did not fail. */
export async function statusOf(p: Promise<unknown>): Promise<number | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

/** The error body's message of a failed API call. */
export async function failureOf(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiException) {
      const body: unknown = typeof err.body === 'string' ? safeJson(err.body) : err.body;
      const message = body && typeof body === 'object' && 'message' in body ? String((body as { message: unknown }).message) : String(err.body);
      return { code: err.code, message };
    }
    throw err;
  }
  throw new Error('expected the request to fail, but it succeeded');
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}
