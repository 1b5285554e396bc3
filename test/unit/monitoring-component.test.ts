import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml, loadYaml } from '@kubernetes/client-node';
import { z } from 'zod';
import { MONITORING_DIR } from '../../tools/monitoring/files.mjs';

// Static checks of the optional monitoring component (infra/monitoring/),
// read from its files: what kustomize and the API server would not catch.
// The component is proven to run by test/e2e/monitoring.test.ts (its
// kube-state-metrics configuration and RBAC, its rules and dashboard).

const INSTALL_NAMESPACE = (loadYaml<{ namespace: string }>(readFileSync('infra/kustomization.yaml', 'utf8'))).namespace;

const Component = z.looseObject({
  kind: z.literal('Component'),
  resources: z.array(z.string()),
  configMapGenerator: z.array(z.looseObject({ name: z.string(), namespace: z.string(), files: z.array(z.string()) })),
});
const component = Component.parse(loadYaml<unknown>(readFileSync(join(MONITORING_DIR, 'kustomization.yaml'), 'utf8')));

interface Obj { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown }
const objects = component.resources.flatMap((f) => loadAllYaml(readFileSync(join(MONITORING_DIR, f), 'utf8')) as Obj[]).filter(Boolean);
const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding']);

describe('infra/monitoring component', () => {
  test('every namespaced object, generated ConfigMaps included, names the install\'s namespace (a component gets no namespace from infra/)', () => {
    const namespaced = objects.filter((o) => !CLUSTER_SCOPED.has(o.kind));
    expect(namespaced.length).toBeGreaterThan(0);
    expect(namespaced.filter((o) => o.metadata.namespace !== INSTALL_NAMESPACE).map((o) => `${o.kind} ${o.metadata.name}`)).toEqual([]);
    expect(component.configMapGenerator.map((g) => g.namespace)).toEqual(component.configMapGenerator.map(() => INSTALL_NAMESPACE));
  });

  test('kube-state-metrics runs the release the tests build, with the generated configuration, as the bound ServiceAccount', () => {
    const pinned = /k8s\.io\/kube-state-metrics\/v2 (v\S+)/.exec(readFileSync('tools/kube-state-metrics/go.mod', 'utf8'))?.[1];
    const deployment = objects.find((o) => o.kind === 'Deployment') as unknown as {
      spec: { template: { spec: { serviceAccountName: string; containers: Array<{ image: string; args: string[]; volumeMounts: Array<{ mountPath: string }> }>; volumes: Array<{ configMap: { name: string } }> } } };
    };
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0]!;
    expect(container.image.endsWith(`:${pinned}`)).toBe(true);
    const generator = component.configMapGenerator.find((g) => g.files.includes('custom-resource-state.yaml'));
    expect(pod.volumes[0]?.configMap.name).toBe(generator?.name);
    expect(container.args).toContain(`--custom-resource-state-config-file=${container.volumeMounts[0]?.mountPath}/custom-resource-state.yaml`);
    expect(container.args).toContain('--custom-resource-state-only=true');
    const binding = objects.find((o) => o.kind === 'ClusterRoleBinding') as unknown as { roleRef: { name: string }; subjects: Array<{ name: string; namespace: string }> };
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: pod.serviceAccountName, namespace: INSTALL_NAMESPACE }]);
    expect(binding.roleRef.name).toBe(objects.find((o) => o.kind === 'ClusterRole')?.metadata.name);
  });

  test('the ClusterRole only reads: list and watch, no secrets, no wildcards', () => {
    const role = objects.find((o) => o.kind === 'ClusterRole') as unknown as { rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }> };
    for (const r of role.rules) {
      expect([...r.verbs].sort()).toEqual(['list', 'watch']);
      expect(r.resources.concat(r.apiGroups).filter((x) => x === '*' || x === 'secrets')).toEqual([]);
    }
  });
});
