import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, PatchStrategy, loadAllYaml, loadYaml, type KubernetesObject } from '@kubernetes/client-node';
import { z } from 'zod';

// Server-side apply of YAML manifests, as `kubectl apply --server-side` would:
// idempotent, so a restart against the same cluster applies the same files
// again without conflict.

const FIELD_MANAGER = 'meridio-2-dev';

const ManifestSchema = z.looseObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  metadata: z.looseObject({ name: z.string().min(1), namespace: z.string().optional() }),
});

const KustomizationSchema = z.looseObject({ resources: z.array(z.string().min(1)).min(1) });

/** The files a kustomization lists, in its order (Namespace first in infra/samples). */
export function kustomizationFiles(dir: string): string[] {
  const k = KustomizationSchema.parse(loadYaml(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')));
  return k.resources.map((r) => join(dir, r));
}

/** The same credentials, with `namespace` as the context's default namespace. */
function withDefaultNamespace(kc: KubeConfig, namespace: string): KubeConfig {
  const copy = new KubeConfig();
  copy.loadFromOptions({
    clusters: kc.clusters,
    users: kc.users,
    contexts: kc.contexts.map((c) => (c.name === kc.currentContext ? { ...c, namespace } : c)),
    currentContext: kc.currentContext,
  });
  return copy;
}

/**
 * Applies the objects in order. `defaultNamespace` is where namespaced objects
 * written without a namespace go (the ServiceAccount in infra/rbac), as with
 * `kubectl apply -n`; discovery tells which are namespaced.
 */
export async function applyObjects(kc: KubeConfig, docs: unknown[], origin: string, defaultNamespace?: string): Promise<string[]> {
  const client = KubernetesObjectApi.makeApiClient(defaultNamespace ? withDefaultNamespace(kc, defaultNamespace) : kc);
  const applied: string[] = [];
  for (const doc of docs) {
    if (doc === null || doc === undefined) continue;
    const m = ManifestSchema.safeParse(doc);
    if (!m.success) throw new Error(`${origin}: not a Kubernetes object: ${m.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    const live = await client.patch<KubernetesObject>(m.data, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
    const ns = live.metadata?.namespace;
    applied.push(`${m.data.kind} ${ns ? `${ns}/` : ''}${m.data.metadata.name}`);
  }
  return applied;
}

export async function applyFiles(kc: KubeConfig, files: string[], defaultNamespace?: string): Promise<string[]> {
  const applied: string[] = [];
  for (const file of files) {
    applied.push(...(await applyObjects(kc, loadAllYaml(readFileSync(file, 'utf8')) as unknown[], file, defaultNamespace)));
  }
  return applied;
}
