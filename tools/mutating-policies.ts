import { AppsV1Api, CustomObjectsApi, type KubeConfig, type V1Deployment } from '@kubernetes/client-node';
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

type Api = CustomObjectsApi;
type Mutation = Record<string, unknown>;
type DeploymentRules = typeof deploymentRules;

/** One policy with its one mutation, bound to the namespace. */
async function bindPolicy(api: Api, name: string, namespace: string, rules: DeploymentRules, mutation: Mutation): Promise<void> {
  await api.createClusterCustomObject({
    ...MAP,
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicy',
      metadata: { name },
      spec: { matchConstraints: rules, failurePolicy: 'Fail', reinvocationPolicy: 'Never', mutations: [mutation] },
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
}

/**
 * Binds the policies, then waits until they take effect (asynchronously):
 * a dry-run create (admission runs, nothing is stored) until `effective`
 * holds for what admission made of it. On a timeout they are removed again.
 */
async function bindAll(admin: KubeConfig, namespace: string, what: string, policies: Array<[string, DeploymentRules, Mutation]>, effective: (probe: V1Deployment) => boolean): Promise<Mutations> {
  const api = admin.makeApiClient(CustomObjectsApi);
  for (const [name, rules, mutation] of policies) await bindPolicy(api, name, namespace, rules, mutation);
  const remove = async (): Promise<void> => {
    for (const [name] of policies) {
      await api.deleteClusterCustomObject({ ...BINDING, name });
      await api.deleteClusterCustomObject({ ...MAP, name });
    }
  };
  const apps = admin.makeApiClient(AppsV1Api);
  try {
    await waitFor(what, async () => {
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
      return effective(probe) ? true : undefined;
    }, { timeoutMs: 30000, intervalMs: 200 });
  } catch (err) {
    await remove();
    throw err;
  }
  return { remove };
}

export async function mutateDeployments(admin: KubeConfig, namespace: string): Promise<Mutations> {
  return bindAll(admin, namespace, 'the mutating policies to take effect', [
    [`mirror-${namespace}`, deploymentRules, {
      patchType: 'JSONPatch',
      jsonPatch: {
        // Only images not yet mirrored, so the policy is idempotent.
        expression: `[0, 1, 2, 3, 4, 5, 6, 7].filter(i, i < size(object.spec.template.spec.containers) && !object.spec.template.spec.containers[i].image.startsWith('${MIRROR}'))
            .map(i, JSONPatch{op: 'replace', path: '/spec/template/spec/containers/' + string(i) + '/image', value: '${MIRROR}' + object.spec.template.spec.containers[i].image})`,
      },
    }],
    [`inject-${namespace}`, deploymentRules, {
      patchType: 'ApplyConfiguration',
      applyConfiguration: {
        expression: `Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{annotations: {'${INJECTED_ANNOTATION}': 'true'}}}}}`,
      },
    }],
  ], (probe) => probe.spec?.template.spec?.containers[0]?.image === `${MIRROR}example/probe:1` && probe.spec.template.metadata?.annotations?.[INJECTED_ANNOTATION] === 'true');
}

/**
 * Every Deployment created in the namespace is stored at 0 replicas, as an
 * autoscaler scaled to zero leaves it (with enforceReplicas false the
 * controller keeps the live count). With no Node, the Deployment controller
 * completes a 0-replica rollout at once and no Pod is ever made: thousands of
 * LB Deployments can roll without Pods.
 */
export async function zeroReplicasAtCreate(admin: KubeConfig, namespace: string): Promise<Mutations> {
  const createRules = { resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments'] }] };
  return bindAll(admin, namespace, 'the zero-replicas policy to take effect', [
    [`zero-replicas-${namespace}`, createRules, { patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{spec: Object.spec{replicas: 0}}' } }],
  ], (probe) => probe.spec?.replicas === 0);
}
