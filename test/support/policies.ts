import { AdmissionregistrationV1Api, AppsV1Api } from '@kubernetes/client-node';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, statusOf } from './cluster.js';

// The seed scenario's fault: a ValidatingAdmissionPolicy (CEL) that refuses
// every change to a Deployment's spec in one namespace. Status writes by the
// deployment controller go through the status subresource and still pass.

export interface Freeze {
  message: string;
  /** Removes the policy and its binding. */
  lift(): Promise<void>;
}

/** `only`: freeze that one Deployment of the namespace, not all of them. */
export async function freezeDeployments(namespace: string, probeDeployment: string, message = 'LB Deployments are frozen for maintenance', opts: { only?: string } = {}): Promise<Freeze> {
  const adm = adminConfig().makeApiClient(AdmissionregistrationV1Api);
  const name = `freeze-${namespace}`;
  await adm.createValidatingAdmissionPolicy({
    body: {
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['deployments'] }] },
        ...(opts.only ? { matchConditions: [{ name: 'one-deployment', expression: `object.metadata.name == '${opts.only}'` }] } : {}),
        validations: [{ expression: 'object.spec == oldObject.spec', message }],
      },
    },
  });
  await adm.createValidatingAdmissionPolicyBinding({
    body: { metadata: { name }, spec: { policyName: name, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } } } },
  });
  const lift = async (): Promise<void> => {
    await adm.deleteValidatingAdmissionPolicyBinding({ name });
    await adm.deleteValidatingAdmissionPolicy({ name });
  };
  // Policies take effect asynchronously: probe with a dry-run update (which
  // runs admission and persists nothing) until it is refused.
  const apps = adminConfig().makeApiClient(AppsV1Api);
  try {
    await waitFor('the policy to take effect', async () => {
      const live = await apps.readNamespacedDeployment({ namespace, name: probeDeployment });
      live.spec!.minReadySeconds = (live.spec!.minReadySeconds ?? 0) + 7;
      return (await statusOf(apps.replaceNamespacedDeployment({ namespace, name: probeDeployment, body: live, dryRun: 'All' }))) === 422 ? true : undefined;
    }, { timeoutMs: 30000, intervalMs: 200 });
  } catch (err) {
    await lift();
    throw err;
  }
  return { message, lift };
}
