import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig } from '../support/cluster.js';
import {
  INSTALL_DIR,
  SYSTEM_NAMESPACE,
  buildInstall,
  ensureKnativeCrds,
  exists,
  dryRunCheck,
  type CheckOutcome,
  type Manifest,
} from '../support/install.js';

// The install, checked against the real schemas on a real API server: the
// pinned Knative Serving and Eventing CRDs (from their Go modules), the
// Gateway API and Meridio-2 CRDs (installed by the control plane), and
// kube-apiserver's own types. Every object of `kustomize build infra` (pinned
// kustomize) goes through a server-side-apply dry run with strict field
// validation. Then deliberately broken copies must fail, which proves the
// check can fail at all.
//
// What this cannot see: Knative's own admission webhooks (not running here),
// and fields under schemas that preserve unknown fields (Eventing's Trigger
// and ApiServerSource specs). test/unit/install-static.test.ts covers those.

let install: Manifest[] = [];
let createdNamespace = false;

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
  const core = adminConfig().makeApiClient(CoreV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name: SYSTEM_NAMESPACE } } });
    createdNamespace = true;
  } catch (err) {
    if (!(err instanceof ApiException && err.code === 409)) throw err;
  }
}, 30 * 60 * 1000);

afterAll(async () => {
  if (!createdNamespace) return;
  const core = adminConfig().makeApiClient(CoreV1Api);
  await core.deleteNamespace({ name: SYSTEM_NAMESPACE });
  // Gone before the next suite, so that no later test sees a half-deleted namespace.
  await waitFor(`namespace ${SYSTEM_NAMESPACE} deleted`, async () => {
    try {
      await core.readNamespace({ name: SYSTEM_NAMESPACE });
      return undefined;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return true;
      throw err;
    }
  }, { timeoutMs: 60000 });
});

async function checkAll(manifests: Manifest[]): Promise<CheckOutcome[]> {
  const out: CheckOutcome[] = [];
  for (const m of manifests) out.push(await dryRunCheck(m));
  return out;
}

/** A copy of infra/ with one exact text edit in one file, built by the pinned kustomize. */
async function brokenBuild(file: string, from: string, to: string): Promise<Manifest[]> {
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-infra-'));
  try {
    cpSync(INSTALL_DIR, dir, { recursive: true });
    const path = join(dir, file);
    const text = readFileSync(path, 'utf8');
    // Exactly one occurrence: the edit must hit the field it claims to.
    expect(text.split(from).length - 1).toBe(1);
    writeFileSync(path, text.replace(from, to));
    return await buildInstall(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
      'sources.knative.dev/v1 SinkBinding',
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
