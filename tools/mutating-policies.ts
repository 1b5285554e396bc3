import { AppsV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { waitFor } from './controlplane/wait-for.js';

// Mutating admission as clusters run it, for tests and the bench: CEL
// MutatingAdmissionPolicies (admissionregistration.k8s.io/v1, GA in
// Kubernetes 1.36), scoped to one namespace. One rewrites every container image to a registry mirror,
// the other adds a Pod template annotation, as sidecar injectors and policy
// engines do.

export const MIRROR = 'mirror.local/';
export const INJECTED_ANNOTATION = 'policy.example/injected';

const MAP = { group: 'admissionregistration.k8s.io', version: 'v1', plural: 'mutatingadmissionpolicies' };
const BINDING = { group: 'admissionregistration.k8s.io', version: 'v1', plural: 'mutatingadmissionpolicybindings' };

const deploymentRules = { resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['deployments'] }] };

export interface Mutations {
  remove(): Promise<void>;
}

export async function mutateDeployments(admin: KubeConfig, namespace: string): Promise<Mutations> {
  const api = admin.makeApiClient(CustomObjectsApi);
  const mirror = `mirror-${namespace}`;
  const inject = `inject-${namespace}`;
  // One policy per mutation, each bound to the namespace below.
  const policies: Array<[string, Record<string, unknown>]> = [
    [mirror, {
      patchType: 'JSONPatch',
      jsonPatch: {
        // Only images not yet mirrored, so the policy is idempotent.
        expression: `[0, 1, 2, 3, 4, 5, 6, 7].filter(i, i < size(object.spec.template.spec.containers) && !object.spec.template.spec.containers[i].image.startsWith('${MIRROR}'))
            .map(i, JSONPatch{op: 'replace', path: '/spec/template/spec/containers/' + string(i) + '/image', value: '${MIRROR}' + object.spec.template.spec.containers[i].image})`,
      },
    }],
    [inject, {
      patchType: 'ApplyConfiguration',
      applyConfiguration: {
        expression: `Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{annotations: {'${INJECTED_ANNOTATION}': 'true'}}}}}`,
      },
    }],
  ];
  for (const [name, mutation] of policies) {
    await api.createClusterCustomObject({
      ...MAP,
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingAdmissionPolicy',
        metadata: { name },
        spec: { matchConstraints: deploymentRules, failurePolicy: 'Fail', reinvocationPolicy: 'Never', mutations: [mutation] },
      },
    });
  }
  for (const policyName of [mirror, inject]) {
    await api.createClusterCustomObject({
      ...BINDING,
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingAdmissionPolicyBinding',
        metadata: { name: policyName },
        spec: { policyName, matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } } },
      },
    });
  }
  const remove = async (): Promise<void> => {
    for (const name of [mirror, inject]) {
      await api.deleteClusterCustomObject({ ...BINDING, name });
      await api.deleteClusterCustomObject({ ...MAP, name });
    }
  };
  // Policies take effect asynchronously: probe with a dry-run create (admission
  // runs, nothing is stored) until both mutations show.
  const apps = admin.makeApiClient(AppsV1Api);
  try {
    await waitFor('the mutating policies to take effect', async () => {
      const probe = await apps.createNamespacedDeployment({
        namespace,
        dryRun: 'All',
        body: {
          metadata: { name: 'admission-probe' },
          spec: {
            selector: { matchLabels: { app: 'probe' } },
            template: { metadata: { labels: { app: 'probe' } }, spec: { containers: [{ name: 'c', image: 'example/probe:1' }] } },
          },
        },
      });
      const mirrored = probe.spec?.template.spec?.containers[0]?.image === `${MIRROR}example/probe:1`;
      const injected = probe.spec?.template.metadata?.annotations?.[INJECTED_ANNOTATION] === 'true';
      return mirrored && injected ? true : undefined;
    }, { timeoutMs: 30000, intervalMs: 200 });
  } catch (err) {
    await remove();
    throw err;
  }
  return { remove };
}

/**
 * Every Deployment created in the namespace is stored at 0 replicas, as an
 * autoscaler scaled to zero leaves it (with enforceReplicas false the
 * controller keeps the live count). With no Node, the Deployment controller
 * completes a 0-replica rollout at once and no Pod is ever made: thousands of
 * LB Deployments can roll without Pods.
 */
export async function zeroReplicasAtCreate(admin: KubeConfig, namespace: string): Promise<Mutations> {
  const api = admin.makeApiClient(CustomObjectsApi);
  const name = `zero-replicas-${namespace}`;
  await api.createClusterCustomObject({
    ...MAP,
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicy',
      metadata: { name },
      spec: {
        matchConstraints: { resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments'] }] },
        failurePolicy: 'Fail',
        reinvocationPolicy: 'Never',
        mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{spec: Object.spec{replicas: 0}}' } }],
      },
    },
  });
  await api.createClusterCustomObject({
    ...BINDING,
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } } },
    },
  });
  const remove = async (): Promise<void> => {
    await api.deleteClusterCustomObject({ ...BINDING, name });
    await api.deleteClusterCustomObject({ ...MAP, name });
  };
  const apps = admin.makeApiClient(AppsV1Api);
  try {
    await waitFor('the zero-replicas policy to take effect', async () => {
      const probe = await apps.createNamespacedDeployment({
        namespace,
        dryRun: 'All',
        body: {
          metadata: { name: 'admission-probe' },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: 'probe' } },
            template: { metadata: { labels: { app: 'probe' } }, spec: { containers: [{ name: 'c', image: 'example/probe:1' }] } },
          },
        },
      });
      return probe.spec?.replicas === 0 ? true : undefined;
    }, { timeoutMs: 30000, intervalMs: 200 });
  } catch (err) {
    await remove();
    throw err;
  }
  return { remove };
}
