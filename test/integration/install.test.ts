import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AuthorizationV1Api, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { readScopeBase, scopeComponent } from '../../tools/release/scope.mjs';
import { adminConfig } from '../support/cluster.js';
import {
  INSTALL_DIR,
  SYSTEM_NAMESPACE,
  buildInstall,
  guessKindToResource,
  serverSideApply,
  servedResources,
  ensureKnativeCrds,
  ensureSystemNamespace,
  exists,
  dryRunCheck,
  type CheckOutcome,
  type Manifest,
} from '../support/install.js';

// The install, checked against the real schemas on a real API server: the
// pinned Knative Serving and Eventing CRDs (from their Go modules), the
// Gateway API and Meridio-2 CRDs (installed by the control plane), and
// kube-apiserver's own types. Every object of `kustomize build infra` (pinned
// kustomize) goes through two dry runs with strict field validation: a
// server-side apply and a create (see dryRunCheck for why both). Then
// deliberately broken copies must fail, which proves the check can fail at
// all. Last, the ApiServerSource's RBAC is put through the permission check
// Knative Eventing makes before it starts the source's adapter.
//
// What this cannot see: Knative's own admission webhooks and controllers (not
// running here), and fields directly under schema nodes that keep unknown
// fields (a Trigger's spec, for one). test/unit/install-static.test.ts checks
// those with strict schemas of its own.

let install: Manifest[] = [];
let removeNamespace: () => Promise<void> = async () => undefined;

beforeAll(async () => {
  // First run on a cold cache: builds kustomize and the Knative adapter (the
  // CRDs come with it) from Go modules, which takes minutes.
  const knative = await ensureKnativeCrds();
  expect(knative.names).toEqual(expect.arrayContaining([
    'services.serving.knative.dev',
    'brokers.eventing.knative.dev',
    'triggers.eventing.knative.dev',
    'apiserversources.sources.knative.dev',
    'pingsources.sources.knative.dev',
    'sinkbindings.sources.knative.dev',
  ]));
  install = await buildInstall();
  // Namespaced objects can only be dry-run into a namespace that exists.
  removeNamespace = await ensureSystemNamespace();
}, 30 * 60 * 1000);

afterAll(async () => {
  await removeNamespace();
});

async function checkAll(manifests: Manifest[]): Promise<CheckOutcome[]> {
  const out: CheckOutcome[] = [];
  for (const m of manifests) out.push(await dryRunCheck(m));
  return out;
}

/**
 * Builds, with the pinned kustomize, a copy of infra/ (as <tmp>/infra) with
 * one exact text edit in one file, or an overlay (<tmp>/overlay, whose
 * kustomization.yaml is given) on top of an unedited copy.
 */
async function buildCopy(opts: { edit?: { file: string; from: string; to: string }; overlay?: string; overlayFiles?: Record<string, string> }): Promise<Manifest[]> {
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-infra-'));
  try {
    cpSync(INSTALL_DIR, join(dir, 'infra'), { recursive: true });
    if (opts.edit) {
      const path = join(dir, 'infra', opts.edit.file);
      const text = readFileSync(path, 'utf8');
      // Exactly one occurrence: the edit must hit the field it claims to.
      expect(text.split(opts.edit.from).length - 1).toBe(1);
      writeFileSync(path, text.replace(opts.edit.from, opts.edit.to));
    }
    if (opts.overlay === undefined) return await buildInstall(join(dir, 'infra'));
    mkdirSync(join(dir, 'overlay'));
    writeFileSync(join(dir, 'overlay', 'kustomization.yaml'), opts.overlay);
    for (const [name, text] of Object.entries(opts.overlayFiles ?? {})) {
      mkdirSync(dirname(join(dir, 'overlay', name)), { recursive: true });
      writeFileSync(join(dir, 'overlay', name), text);
    }
    return await buildInstall(join(dir, 'overlay'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An overlay of infra/ with the given components, then `rest` (more kustomization lines). */
function overlayOf(components: string[], rest: string[] = []): string {
  return ['apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:', '  - ../infra', 'components:', ...components.map((c) => `  - ../infra/${c}`), ...rest, ''].join('\n');
}

async function brokenBuild(file: string, from: string, to: string): Promise<Manifest[]> {
  return buildCopy({ edit: { file, from, to } });
}

function failures(outcomes: CheckOutcome[]): CheckOutcome[] {
  return outcomes.filter((o) => !o.ok);
}

describe('the kustomize build of infra/', () => {
  test('contains the whole install', () => {
    const kinds = install.map(({ object: o }) => `${o.apiVersion} ${o.kind}`);
    expect(new Set(kinds)).toEqual(new Set([
      'v1 Namespace',
      'apiextensions.k8s.io/v1 CustomResourceDefinition',
      'v1 ServiceAccount',
      'rbac.authorization.k8s.io/v1 ClusterRole',
      'rbac.authorization.k8s.io/v1 ClusterRoleBinding',
      'v1 ConfigMap',
      'serving.knative.dev/v1 Service',
      'eventing.knative.dev/v1 Broker',
      'eventing.knative.dev/v1 Trigger',
      'sources.knative.dev/v1 ApiServerSource',
      'sources.knative.dev/v1 PingSource',
      // The gateway-watch component: Gateway events despite Knative's plural guess.
      'sources.knative.dev/v1 ContainerSource',
      'sources.knative.dev/v1 SinkBinding',
      'eventing.knative.dev/v1alpha1 EventPolicy',
    ]));
    // Everything namespaced lands in the system namespace.
    for (const { object: o } of install) {
      if (o.metadata.namespace !== undefined) expect(o.metadata.namespace).toBe(SYSTEM_NAMESPACE);
    }
  });

  test('passes server-side dry runs with strict field validation, object by object, with zero errors', async () => {
    const outcomes = await checkAll(install);
    expect(failures(outcomes)).toEqual([]);
    expect(outcomes).toHaveLength(install.length);
    // A dry run persists nothing.
    const ksvc = install.find(({ object: o }) => o.kind === 'Service' && o.apiVersion === 'serving.knative.dev/v1');
    expect(ksvc).toBeDefined();
    if (ksvc) expect(await exists(ksvc.object)).toBe(false);
  });

  test('a misspelled field in the Knative Service (strict Serving schema) fails the dry run', async () => {
    const broken = await brokenBuild('knative/service.yaml', 'readOnlyRootFilesystem: true', 'readOnlyRootFileSystem: true');
    const failed = failures(await checkAll(broken));
    expect(failed.map((f) => f.object)).toEqual([`Service ${SYSTEM_NAMESPACE}/meridio-2-gateway-controller (serving.knative.dev/v1)`]);
    const [f] = failed;
    // Apply: "failed to create typed patch object (...): .spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem: field not declared in schema"
    expect(f?.apply.status).toBe(500);
    expect(f?.apply.message).toContain('.spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem: field not declared in schema');
    // Create: "Service in version "v1" cannot be handled as a Service: strict decoding error: unknown field "spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem""
    expect(f?.create.status).toBe(400);
    expect(f?.create.message).toContain('strict decoding error: unknown field "spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem"');
  });

  test('a misspelled Deployment selector in the ApiServerSource fails the dry run (the source would watch every Deployment)', async () => {
    const broken = await brokenBuild('knative/apiserversource.yaml', 'matchLabels:', 'matchLabel:');
    const failed = failures(await checkAll(broken));
    expect(failed.map((f) => f.object)).toEqual([`ApiServerSource ${SYSTEM_NAMESPACE}/meridio-2-gateway-watch (sources.knative.dev/v1)`]);
    const [f] = failed;
    // Only the create sees it: apply treats everything under a spec that
    // keeps unknown fields as untyped.
    expect(f?.apply.status).toBe(201);
    expect(f?.create.status).toBe(400);
    expect(f?.create.message).toContain('strict decoding error: unknown field "spec.resources[4].selector.matchLabel"');
  });

  test('a wrongly typed value (a string where the Broker schema wants an integer) fails the dry run', async () => {
    const broken = await brokenBuild('knative/broker.yaml', 'retry: 6', 'retry: six');
    const failed = failures(await checkAll(broken));
    expect(failed.map((f) => f.object)).toEqual([`Broker ${SYSTEM_NAMESPACE}/meridio-2-gateway-events (eventing.knative.dev/v1)`]);
    const [f] = failed;
    expect(f?.apply.message).toContain('.spec.delivery.retry: expected numeric (int or float), got string');
    expect(f?.create.status).toBe(422);
    expect(f?.create.message).toContain('spec.delivery.retry');
  });

  test('limit of the schema check: Eventing keeps unknown fields in a Trigger spec, so a misspelled filter passes the API server', async () => {
    // A Trigger without its filter would get every event of the Broker. The
    // API server cannot see this; test/unit/install-static.test.ts does.
    const broken = await brokenBuild('knative/triggers.yaml', '  filter:\n    attributes:\n      type: dev.knative.sources.ping', '  filtr:\n    attributes:\n      type: dev.knative.sources.ping');
    const resync = broken.find(({ object: o }) => o.kind === 'Trigger' && o.metadata.name === 'meridio-2-resync');
    expect(resync?.text).toContain('filtr:');
    expect(failures(await checkAll(broken))).toEqual([]);
  });
});

describe('the ApiServerSource and Knative Eventing', () => {
  const rbac = (): RbacAuthorizationV1Api => adminConfig().makeApiClient(RbacAuthorizationV1Api);
  const SOURCE_SA = 'meridio-2-apiserversource';
  const UNPATCHED = 'meridio-2-install-check-unpatched';
  const createdClusterRoles: string[] = [];
  const createdBindings: string[] = [];

  afterAll(async () => {
    await adminConfig().makeApiClient(CoreV1Api).deleteNamespacedServiceAccount({ namespace: SYSTEM_NAMESPACE, name: SOURCE_SA }).catch(() => undefined);
    for (const name of createdBindings) await rbac().deleteClusterRoleBinding({ name }).catch(() => undefined);
    for (const name of createdClusterRoles) await rbac().deleteClusterRole({ name }).catch(() => undefined);
  });

  interface SourceResource {
    apiVersion: string;
    kind: string;
  }
  function sourceResources(): SourceResource[] {
    const source = install.find(({ object: o }) => o.kind === 'ApiServerSource')?.object;
    const spec = source?.spec as { resources?: SourceResource[] } | undefined;
    return spec?.resources ?? [];
  }

  /** One SubjectAccessReview exactly as Knative's runAccessCheck makes it (user only, no groups). */
  async function allowed(serviceAccount: string, namespace: string, verb: string, group: string, resource: string): Promise<boolean> {
    const review = await adminConfig().makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${SYSTEM_NAMESPACE}:${serviceAccount}`,
          resourceAttributes: { namespace, verb, group, resource },
        },
      },
    });
    return review.status?.allowed === true;
  }

  /** The "missing" list Knative's runAccessCheck would report, over a few namespaces the empty selector covers. */
  async function knativeAccessCheck(serviceAccount: string): Promise<string[]> {
    const missing: string[] = [];
    for (const r of sourceResources()) {
      const group = r.apiVersion.includes('/') ? (r.apiVersion.split('/')[0] ?? '') : '';
      const resource = guessKindToResource(r.kind);
      for (const ns of ['default', SYSTEM_NAMESPACE]) {
        for (const verb of ['get', 'list', 'watch']) {
          if (!(await allowed(serviceAccount, ns, verb, group, resource))) missing.push(`${verb} ${resource}.${group} in ${ns}`);
        }
      }
    }
    return missing;
  }

  test('every resource the ClusterRoles grant is served under that name, except the names only Knative guesses', async () => {
    const guessedOnly = new Set(sourceResources().map((r) => guessKindToResource(r.kind)));
    const served = new Map<string, string[]>();
    for (const r of sourceResources()) served.set(r.apiVersion.includes('/') ? (r.apiVersion.split('/')[0] ?? '') : '', await servedResources(r.apiVersion));
    const source = install.find(({ object: o }) => o.kind === 'ClusterRole' && o.metadata.name === SOURCE_SA)?.object;
    const rules = (source?.rules ?? []) as Array<{ apiGroups: string[]; resources: string[] }>;
    expect(rules.length).toBeGreaterThan(0);
    const unserved: string[] = [];
    for (const rule of rules) {
      for (const group of rule.apiGroups) {
        for (const resource of rule.resources) {
          if (!(served.get(group) ?? []).includes(resource)) unserved.push(`${resource}.${group}`);
        }
      }
    }
    // Only the Gateway kind is mis-guessed.
    expect(unserved).toEqual(['gatewaies.gateway.networking.k8s.io']);
    expect(guessedOnly.has('gatewaies')).toBe(true);
  });

  test('the shipped ServiceAccount passes Knative Eventing\'s permission check; without the guessed-name rule it would not', async () => {
    const identity = install.filter(({ object: o }) =>
      (o.kind === 'ServiceAccount' || o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding') && o.metadata.name === SOURCE_SA);
    expect(identity).toHaveLength(3);
    for (const m of identity) {
      expect(await serverSideApply(m, { dryRun: false })).toEqual({ status: expect.any(Number) });
      if (m.object.kind === 'ClusterRole') createdClusterRoles.push(m.object.metadata.name);
      if (m.object.kind === 'ClusterRoleBinding') createdBindings.push(m.object.metadata.name);
    }
    // The authorizer sees new bindings through an informer.
    await waitFor('the ApiServerSource binding to take effect', async () => ((await knativeAccessCheck(SOURCE_SA)).length === 0 ? true : undefined), { timeoutMs: 30000 });
    expect(await knativeAccessCheck(SOURCE_SA)).toEqual([]);

    // Negative control: the same role without the "gatewaies" rule, bound to another account.
    const role = identity.find(({ object: o }) => o.kind === 'ClusterRole')?.object;
    const rules = ((role?.rules ?? []) as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>).filter((r) => !r.resources.includes('gatewaies'));
    await rbac().createClusterRole({ body: { metadata: { name: UNPATCHED }, rules } });
    createdClusterRoles.push(UNPATCHED);
    await rbac().createClusterRoleBinding({
      body: {
        metadata: { name: UNPATCHED },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: UNPATCHED },
        subjects: [{ kind: 'ServiceAccount', name: UNPATCHED, namespace: SYSTEM_NAMESPACE }],
      },
    });
    createdBindings.push(UNPATCHED);
    await waitFor('the unpatched binding to take effect', async () => ((await allowed(UNPATCHED, 'default', 'list', 'gateway.networking.k8s.io', 'gatewayclasses')) ? true : undefined), { timeoutMs: 30000 });
    const missing = await knativeAccessCheck(UNPATCHED);
    const expected = ['default', SYSTEM_NAMESPACE].flatMap((ns) => ['get', 'list', 'watch'].map((verb) => `${verb} gatewaies.gateway.networking.k8s.io in ${ns}`));
    expect([...missing].sort()).toEqual([...expected].sort());
  });

  test('the default install runs the gateway-watch ContainerSource with Knative\'s adapter image, which an operator re-points like the controller\'s', async () => {
    const cs = install.find(({ object: o }) => o.kind === 'ContainerSource');
    expect(cs?.object.metadata.namespace).toBe(SYSTEM_NAMESPACE);
    expect(cs?.text).toMatch(/image: knative-apiserver-receive-adapter:v1\.23\.0\n/);
    // What docs/install.md tells an overlay to write: the installed Eventing's
    // adapter, by digest, matched by the name infra/ already gave the image.
    const digest = `sha256:${'0'.repeat(64)}`;
    const shipped = /image: (\S+):v1\.23\.0\n/.exec(cs?.text ?? '')?.[1] ?? '';
    const overlay = ['apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:', '  - ../infra', 'images:', `  - name: ${shipped}`, '    newName: example.invalid/knative/apiserver-receive-adapter', `    digest: ${digest}`, ''].join('\n');
    const built = await buildCopy({ overlay });
    expect(built).toHaveLength(install.length);
    expect(built.find(({ object: o }) => o.kind === 'ContainerSource')?.text).toContain(`image: example.invalid/knative/apiserver-receive-adapter@${digest}`);
    expect(failures(await checkAll(built))).toEqual([]);
  });
  test('the install beside Meridio-2 (beside-meridio-2 component) leaves out the CRDs, sets the LB ServiceAccount and passes the same dry runs', async () => {
    const overlay = overlayOf(['beside-meridio-2']);
    const built = await buildCopy({ overlay });
    const name = ({ object: o }: Manifest): string => `${o.kind} ${o.metadata.name}`;
    const crds = install.filter(({ object: o }) => o.kind === 'CustomResourceDefinition').map(name);
    expect(crds.sort()).toEqual(['CustomResourceDefinition gatewayconfigurations.meridio-2.nordix.org', 'CustomResourceDefinition l34routes.meridio-2.nordix.org']);
    // Everything else, unchanged but for the Service's LB_SERVICE_ACCOUNT.
    expect(built.map(name).sort()).toEqual(install.map(name).filter((n) => !crds.includes(n)).sort());
    const service = built.find(({ object: o }) => o.kind === 'Service');
    expect(service?.text).toMatch(/- name: LB_SERVICE_ACCOUNT\n\s+value: meridio-2-stateless-load-balancer\n/);
    for (const m of built) {
      if (m.object.kind !== 'Service') expect(m.text).toBe(install.find((i) => name(i) === name(m))?.text);
    }
    expect(failures(await checkAll(built))).toEqual([]);
  });
  test('the migration overlay of docs/install.md (Meridio-2\'s template, its namespace only, the scope generated) builds and passes the same dry runs', async () => {
    const template = readFileSync('test/oracle/meridio2/cases/basic/template.yaml', 'utf8').replaceAll('value: "" # set to the Gateway name by the controller', 'value:');
    // The namespace scope as the doc generates it (tools/release/scope.mts): Meridio-2's namespace only.
    const scope = scopeComponent({ namespace: SYSTEM_NAMESPACE, watch: ['meridio-2'] }, readScopeBase(INSTALL_DIR));
    const overlay = [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      'resources:',
      '  - ../infra',
      'components:',
      '  - ../infra/beside-meridio-2',
      '  - scope',
      'configMapGenerator:',
      '  - name: meridio-2-lb-template',
      '    behavior: replace',
      '    files:',
      '      - lb-deployment.yaml',
      '    options:',
      '      immutable: true',
      '',
    ].join('\n');
    const built = await buildCopy({ overlay, overlayFiles: { 'lb-deployment.yaml': template, 'scope/kustomization.yaml': scope } });
    expect(built.filter(({ object: o }) => o.kind === 'CustomResourceDefinition')).toEqual([]);
    const configMap = built.find(({ object: o }) => o.kind === 'ConfigMap');
    const service = built.find(({ object: o }) => o.kind === 'Service');
    // The Service mounts the ConfigMap that holds Meridio-2's template (hash-suffixed name followed).
    expect(configMap?.text).toContain('MERIDIO_GATEWAY_NAME');
    expect(configMap?.text).not.toContain('set to the Gateway name by the controller');
    expect(service?.text).toContain(`name: ${configMap?.object.metadata.name ?? '?'}`);
    expect(service?.text).toMatch(/- name: WATCH_NAMESPACES\n\s+value: meridio-2\n/);
    expect(service?.text).toMatch(/- name: LB_SERVICE_ACCOUNT\n\s+value: meridio-2-stateless-load-balancer\n/);
    expect(built.find(({ object: o }) => o.kind === 'ApiServerSource')?.text).toMatch(/key: kubernetes\.io\/metadata\.name\n\s+operator: In\n\s+values:\n\s+- meridio-2\n/);
    expect(built.find(({ object: o }) => o.kind === 'ContainerSource')?.text).toContain('"allNamespaces":false,"namespaces":["meridio-2"]');
    expect(failures(await checkAll(built))).toEqual([]);
  });
});
