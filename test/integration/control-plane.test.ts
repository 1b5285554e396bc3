import { VersionApi, AppsV1Api, CoreV1Api, CustomObjectsApi, AdmissionregistrationV1Api, RbacAuthorizationV1Api, type V1Deployment } from '@kubernetes/client-node';
import { countBy } from '../../tools/controlplane/audit-log.js';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, auditLog, clusterInfo, failureOf, serviceAccountConfig, statusOf, useNamespace, whoAmI } from '../support/cluster.js';

// What the API server decides, checked on the real one. Every later test
// relies on these behaviours, so they are proven here first.

const GW_GROUP = 'gateway.networking.k8s.io';

function gateway(name: string): Record<string, unknown> {
  return {
    apiVersion: `${GW_GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name },
    spec: { gatewayClassName: 'some-class', listeners: [{ name: 'l4', port: 80, protocol: 'TCP' }] },
  };
}

function deployment(name: string, labels: Record<string, string> = {}): V1Deployment {
  return {
    metadata: { name, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'registry.invalid/none:1' }] } },
    },
  };
}

describe('the real control plane', () => {
  const ns = useNamespace('cp');
  const admin = adminConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const apps = admin.makeApiClient(AppsV1Api);
  const custom = admin.makeApiClient(CustomObjectsApi);

  it('runs the pinned Kubernetes version', async () => {
    const info = clusterInfo();
    const v = await admin.makeApiClient(VersionApi).getCode();
    expect(v.gitVersion).toBe(info.versions.kubernetes);
    expect(v.gitVersion).toMatch(/^v1\.36\./);
  });

  it('answers 409 to the second of two updates carrying the same stale resourceVersion', async () => {
    const cm = await core.createNamespacedConfigMap({ namespace: ns(), body: { metadata: { name: 'c' }, data: { v: '0' } } });
    const stale = cm.metadata?.resourceVersion;
    await core.replaceNamespacedConfigMap({ namespace: ns(), name: 'c', body: { metadata: { name: 'c', resourceVersion: stale }, data: { v: '1' } } });
    const second = await statusOf(core.replaceNamespacedConfigMap({ namespace: ns(), name: 'c', body: { metadata: { name: 'c', resourceVersion: stale }, data: { v: '2' } } }));
    expect(second).toBe(409);
    expect((await core.readNamespacedConfigMap({ namespace: ns(), name: 'c' })).data?.v).toBe('1');
  });

  it('keeps metadata.generation on a status-subresource write and bumps it on a spec change', async () => {
    type Gw = { metadata: { generation: number; resourceVersion: string }; spec: { listeners: unknown[] }; status?: unknown };
    const created = (await custom.createNamespacedCustomObject({ group: GW_GROUP, version: 'v1', namespace: ns(), plural: 'gateways', body: gateway('g') })) as Gw;
    expect(created.metadata.generation).toBe(1);
    const withStatus = {
      ...created,
      status: { conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'ok', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 1 }] },
    };
    const afterStatus = (await custom.replaceNamespacedCustomObjectStatus({ group: GW_GROUP, version: 'v1', namespace: ns(), plural: 'gateways', name: 'g', body: withStatus })) as Gw;
    expect(afterStatus.metadata.generation).toBe(1);
    expect(afterStatus.metadata.resourceVersion).not.toBe(created.metadata.resourceVersion);
    const changed = { ...afterStatus, spec: { ...afterStatus.spec, listeners: [{ name: 'l4', port: 81, protocol: 'TCP' }] } };
    const afterSpec = (await custom.replaceNamespacedCustomObject({ group: GW_GROUP, version: 'v1', namespace: ns(), plural: 'gateways', name: 'g', body: changed })) as Gw;
    expect(afterSpec.metadata.generation).toBe(2);
  });

  it('garbage-collects a Deployment controlled by a Gateway once the Gateway is deleted', async () => {
    const gw = (await custom.createNamespacedCustomObject({ group: GW_GROUP, version: 'v1', namespace: ns(), plural: 'gateways', body: gateway('owner') })) as { metadata: { uid: string } };
    const d = deployment('owned');
    d.metadata!.ownerReferences = [{ apiVersion: `${GW_GROUP}/v1`, kind: 'Gateway', name: 'owner', uid: gw.metadata.uid, controller: true, blockOwnerDeletion: true }];
    await apps.createNamespacedDeployment({ namespace: ns(), body: d });
    await custom.deleteNamespacedCustomObject({ group: GW_GROUP, version: 'v1', namespace: ns(), plural: 'gateways', name: 'owner' });
    await waitFor('the owned Deployment to be garbage-collected', async () => ((await statusOf(apps.readNamespacedDeployment({ namespace: ns(), name: 'owned' }))) === 404 ? true : undefined), { timeoutMs: 60000 });
  });

  it('enforces a CEL ValidatingAdmissionPolicy with 422 and the policy message', async () => {
    const adm = admin.makeApiClient(AdmissionregistrationV1Api);
    const policyName = `deny-frozen-${ns()}`;
    const message = 'Deployments labelled frozen=true may not be updated';
    await apps.createNamespacedDeployment({ namespace: ns(), body: deployment('frozen', { frozen: 'true' }) });
    await adm.createValidatingAdmissionPolicy({
      body: {
        metadata: { name: policyName },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: { resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['deployments'] }] },
          validations: [{ expression: "!has(object.metadata.labels) || !('frozen' in object.metadata.labels) || object.metadata.labels['frozen'] != 'true'", message }],
        },
      },
    });
    await adm.createValidatingAdmissionPolicyBinding({
      body: {
        metadata: { name: policyName },
        spec: {
          policyName,
          validationActions: ['Deny'],
          matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns() } } },
        },
      },
    });
    try {
      // Policies take effect asynchronously (the API server compiles and
      // caches them), so poll until the update is refused.
      const failure = await waitFor('the policy to deny updates', async () => {
        const current = await apps.readNamespacedDeployment({ namespace: ns(), name: 'frozen' });
        current.spec!.replicas = (current.spec!.replicas ?? 1) + 1;
        const f = await failureOf(apps.replaceNamespacedDeployment({ namespace: ns(), name: 'frozen', body: current })).catch(() => undefined);
        // 409: the deployment controller wrote status in between; read again.
        return f?.code === 409 ? undefined : f;
      }, { timeoutMs: 30000, intervalMs: 200 });
      expect(failure.code).toBe(422);
      expect(failure.message).toContain(message);
      // Unlabelled Deployments are not affected.
      await apps.createNamespacedDeployment({ namespace: ns(), body: deployment('free') });
      // The deployment controller writes status concurrently: retry on 409.
      await waitFor('an update of the unlabelled Deployment', async () => {
        const free = await apps.readNamespacedDeployment({ namespace: ns(), name: 'free' });
        free.spec!.replicas = 3;
        const code = await statusOf(apps.replaceNamespacedDeployment({ namespace: ns(), name: 'free', body: free }));
        if (code === 409) return undefined;
        return code ?? 200;
      }).then((code) => expect(code).toBe(200));
    } finally {
      await adm.deleteValidatingAdmissionPolicyBinding({ name: policyName });
      await adm.deleteValidatingAdmissionPolicy({ name: policyName });
    }
  });

  it('forbids a ServiceAccount without RBAC (403) and allows it once a Role is bound', async () => {
    const { kc, username } = await serviceAccountConfig(ns(), 'reader');
    expect(await whoAmI(kc)).toBe(username);
    const asSa = kc.makeApiClient(CoreV1Api);
    expect(await statusOf(asSa.listNamespacedConfigMap({ namespace: ns() }))).toBe(403);
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({ namespace: ns(), body: { metadata: { name: 'cm-reader' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }] } });
    await rbac.createNamespacedRoleBinding({
      namespace: ns(),
      body: { metadata: { name: 'cm-reader' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-reader' }, subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns() }] },
    });
    // The RBAC authorizer reads bindings from an informer cache: poll.
    await waitFor('the RoleBinding to take effect', async () => ((await statusOf(asSa.listNamespacedConfigMap({ namespace: ns() }))) === undefined ? true : undefined));
    // The Role grants list only.
    expect(await statusOf(asSa.createNamespacedConfigMap({ namespace: ns(), body: { metadata: { name: 'x' } } }))).toBe(403);
  });

  it('reports through the audit log exactly the requests a test made', async () => {
    const { kc, username } = await serviceAccountConfig(ns(), 'writer');
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({ namespace: ns(), body: { metadata: { name: 'cm' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'update', 'patch'] }] } });
    await rbac.createNamespacedRoleBinding({
      namespace: ns(),
      body: { metadata: { name: 'cm' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm' }, subjects: [{ kind: 'ServiceAccount', name: 'writer', namespace: ns() }] },
    });
    const asSa = kc.makeApiClient(CoreV1Api);
    await waitFor('RBAC', async () => ((await statusOf(asSa.listNamespacedConfigMap({ namespace: ns() }))) === undefined ? true : undefined));

    const window = await auditLog().begin();
    await asSa.createNamespacedConfigMap({ namespace: ns(), body: { metadata: { name: 'a' }, data: { k: '1' } } });
    const got = await asSa.readNamespacedConfigMap({ namespace: ns(), name: 'a' });
    await asSa.replaceNamespacedConfigMap({ namespace: ns(), name: 'a', body: { ...got, data: { k: '2' } } });
    await asSa.listNamespacedConfigMap({ namespace: ns() });
    await asSa.listNamespacedConfigMap({ namespace: ns() });
    const events = await window.end();

    expect(countBy(events, { user: username })).toEqual({
      [`${username} create configmaps`]: 1,
      [`${username} get configmaps`]: 1,
      [`${username} update configmaps`]: 1,
      [`${username} list configmaps`]: 2,
    });
    const create = events.find((e) => e.verb === 'create' && e.user.username === username);
    expect(create?.objectRef?.namespace).toBe(ns());
    expect(create?.responseStatus?.code).toBe(201);
  });

  it('rejects an invalid GatewayConfiguration at the API server', async () => {
    const valid = {
      apiVersion: 'meridio-2.nordix.org/v1alpha1',
      kind: 'GatewayConfiguration',
      metadata: { name: 'cfg' },
      spec: {
        networkAttachments: [{ type: 'NAD', nad: { name: 'macvlan', namespace: 'default', interface: 'net1' } }],
        internalSubnets: [{ attachmentType: 'NAD', cidr: '172.16.0.0/24' }],
        horizontalScaling: { replicas: 2, enforceReplicas: true },
      },
    };
    const create = (body: object) => custom.createNamespacedCustomObject({ group: 'meridio-2.nordix.org', version: 'v1alpha1', namespace: ns(), plural: 'gatewayconfigurations', body });

    const zero = await failureOf(create({ ...valid, spec: { ...valid.spec, horizontalScaling: { replicas: 0 } } }));
    expect(zero.code).toBe(422);
    expect(zero.message).toMatch(/replicas/);

    const foo = await failureOf(create({ ...valid, spec: { ...valid.spec, networkAttachments: [{ type: 'Foo', nad: { name: 'x', interface: 'net1' } }] } }));
    expect(foo.code).toBe(422);
    expect(foo.message).toContain('Foo');

    const stored = (await create(valid)) as { spec: { horizontalScaling: { replicas: number; enforceReplicas: boolean } } };
    expect(stored.spec.horizontalScaling).toEqual({ replicas: 2, enforceReplicas: true });
  });
});
