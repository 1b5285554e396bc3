import { readFileSync, readdirSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { ApiException, ApiextensionsV1Api, CoreV1Api, loadAllYaml } from '@kubernetes/client-node';
import { z } from 'zod';
import { ensureKnativeCrds as pinnedKnativeCrds } from '../../tools/knative/build.mjs';
import { ensurePrometheusOperatorCrds as pinnedPrometheusOperatorCrds } from '../../tools/prometheus-operator/crds.mjs';
import { kustomizeBuild } from '../../tools/go-tools.mjs';
import { waitFor } from '../../tools/controlplane/wait-for.js';
import { adminConfig, clusterInfo } from './cluster.js';

// Helpers for the install tests: render infra/ with the pinned kustomize, put
// the pinned Knative CRDs on the shared control plane, and send objects to the
// API server as server-side-apply dry runs.

export const INSTALL_DIR = 'infra';
export const SYSTEM_NAMESPACE = 'meridio-2-system';
export const FIELD_MANAGER = 'meridio-2-install-check';

/** The shape every object of a manifest must have; the rest is passed through untouched. */
export const ManifestObjectSchema = z.looseObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  metadata: z.looseObject({
    name: z.string().min(1),
    namespace: z.string().min(1).optional(),
  }),
});
export type ManifestObject = z.infer<typeof ManifestObjectSchema>;

/** One document of a manifest: its parsed identity, and its exact text. */
export interface Manifest {
  object: ManifestObject;
  /**
   * The document as written. The API server gets this text, never a
   * re-serialization: client-node's YAML loader maps built-in kinds onto its
   * typed models, which silently drops unknown fields (the very mistakes the
   * install tests look for) and renames others.
   */
  text: string;
}

function meaningful(text: string): boolean {
  return text.split('\n').some((l) => l.trim() !== '' && !l.trim().startsWith('#'));
}

/**
 * Splits a multi-document YAML stream at its `---` lines; documents holding
 * only comments are skipped. The split is checked against a real YAML parse,
 * so a `---` inside a block scalar cannot cut a document in two unnoticed.
 */
export function parseManifests(yaml: string, source: string): Manifest[] {
  const chunks = yaml.split(/^---[ \t]*$/m).filter(meaningful);
  const whole: unknown[] = loadAllYaml(yaml);
  const count = whole.filter((d) => d !== null && d !== undefined).length;
  if (count !== chunks.length) throw new Error(`${source}: ${chunks.length} documents by "---" lines, but ${count} by the YAML parser`);
  return chunks.map((text, i) => {
    const docs: unknown[] = loadAllYaml(text);
    const r = ManifestObjectSchema.safeParse(docs[0]);
    if (!r.success) throw new Error(`${source}, document ${i + 1}: ${r.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; ')}`);
    return { object: r.data, text };
  });
}

/**
 * The install's namespace, which namespaced objects need to be dry-run into:
 * created unless it exists. Returns what deletes it again (only when created
 * here), waiting until it is gone so that no later test sees it half-deleted.
 */
export async function ensureSystemNamespace(): Promise<() => Promise<void>> {
  const core = adminConfig().makeApiClient(CoreV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name: SYSTEM_NAMESPACE } } });
  } catch (err) {
    if (err instanceof ApiException && err.code === 409) return async () => undefined;
    throw err;
  }
  return async () => {
    await core.deleteNamespace({ name: SYSTEM_NAMESPACE });
    await waitFor(`namespace ${SYSTEM_NAMESPACE} deleted`, async () => {
      try {
        await core.readNamespace({ name: SYSTEM_NAMESPACE });
        return undefined;
      } catch (err) {
        if (err instanceof ApiException && err.code === 404) return true;
        throw err;
      }
    }, { timeoutMs: 60000 });
  };
}

/** `kustomize build <dir>` with the pinned kustomize, split into documents. */
export async function buildInstall(dir: string = INSTALL_DIR): Promise<Manifest[]> {
  return parseManifests(await kustomizeBuild(dir), `kustomize build ${dir}`);
}

export function describeObject(obj: ManifestObject): string {
  const ns = obj.metadata.namespace ? `${obj.metadata.namespace}/` : '';
  return `${obj.kind} ${ns}${obj.metadata.name} (${obj.apiVersion})`;
}

// --- HTTP as the admin, for the calls client-node has no parameter for
// (fieldValidation on a server-side apply).

interface HttpResult {
  status: number;
  body: string;
}

function adminRequest(method: string, path: string, body?: string, contentType?: string): Promise<HttpResult> {
  const info = clusterInfo();
  const url = new URL(path, info.server);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca: readFileSync(info.caCert),
        cert: readFileSync(info.admin.cert),
        key: readFileSync(info.admin.key),
        headers: {
          accept: 'application/json',
          ...(body !== undefined ? { 'content-type': contentType ?? 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
        },
        timeout: 30000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const ApiResourceListSchema = z.object({
  resources: z.array(z.object({ name: z.string(), kind: z.string(), namespaced: z.boolean() })),
});

const StatusSchema = z.looseObject({ message: z.string().optional(), reason: z.string().optional() });

/** Discovery: the REST path of an object's collection, and whether it is namespaced. */
const discoveryCache = new Map<string, z.infer<typeof ApiResourceListSchema>>();
async function resourceFor(apiVersion: string, kind: string): Promise<{ base: string; plural: string; namespaced: boolean }> {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  let list = discoveryCache.get(base);
  if (!list) {
    const res = await adminRequest('GET', base);
    if (res.status !== 200) throw new Error(`discovery of ${apiVersion} failed: HTTP ${res.status} ${res.body.slice(0, 300)}`);
    list = ApiResourceListSchema.parse(JSON.parse(res.body));
    discoveryCache.set(base, list);
  }
  const r = list.resources.find((x) => x.kind === kind && !x.name.includes('/'));
  if (!r) throw new Error(`the API server does not serve kind ${kind} in ${apiVersion}`);
  return { base, plural: r.name, namespaced: r.namespaced };
}

/** The resource name (plural) the API server serves `kind` of `apiVersion` under. */
export async function pluralOf(apiVersion: string, kind: string): Promise<string> {
  return (await resourceFor(apiVersion, kind)).plural;
}

/** One request's answer: its HTTP status and, when it failed, the API server's message. */
export interface HttpOutcome {
  status: number;
  message?: string;
}

function outcomeOf(res: HttpResult): HttpOutcome {
  if (res.status >= 200 && res.status < 300) return { status: res.status };
  let message = res.body;
  try {
    message = StatusSchema.parse(JSON.parse(res.body)).message ?? res.body;
  } catch {
    // not a Status: keep the raw body
  }
  return { status: res.status, message };
}

async function paths(obj: ManifestObject): Promise<{ collection: string; item: string }> {
  const { base, plural, namespaced } = await resourceFor(obj.apiVersion, obj.kind);
  const ns = obj.metadata.namespace;
  if (namespaced && !ns) throw new Error(`${describeObject(obj)} is namespaced but has no namespace`);
  const collection = `${base}${namespaced ? `/namespaces/${encodeURIComponent(ns ?? '')}` : ''}/${plural}`;
  return { collection, item: `${collection}/${encodeURIComponent(obj.metadata.name)}` };
}

/**
 * Server-side apply as the admin, with strict field validation (an unknown or
 * duplicated field is an error, not a warning) and dryRun=All: the request
 * passes authentication, defaulting, schema validation and admission exactly
 * like a real one, and nothing is persisted. It works whether or not the
 * object exists.
 *
 * force=true: ownership conflicts with other field managers (an object this
 * suite created some other way) are not what this checks; with dryRun they
 * change nothing.
 *
 * Note: kube-apiserver answers 500 ("failed to create typed patch object")
 * when the applied object does not match the schema's types.
 */
export async function serverSideApplyDryRun(manifest: Manifest): Promise<HttpOutcome> {
  return serverSideApply(manifest, { dryRun: true });
}

/** Server-side apply as the admin; `dryRun: false` persists the object. */
export async function serverSideApply(manifest: Manifest, opts: { dryRun: boolean }): Promise<HttpOutcome> {
  const { item } = await paths(manifest.object);
  const query = new URLSearchParams({ fieldManager: FIELD_MANAGER, fieldValidation: 'Strict', force: 'true' });
  if (opts.dryRun) query.set('dryRun', 'All');
  return outcomeOf(await adminRequest('PATCH', `${item}?${query.toString()}`, manifest.text, 'application/apply-patch+yaml'));
}

/** Every document of a manifest file. */
export function manifestsOf(file: string): Manifest[] {
  return parseManifests(readFileSync(file, 'utf8'), file);
}

/** An object built in code, as a manifest (its JSON is its text). */
export function objectManifest(obj: Record<string, unknown>): Manifest {
  return parseManifests(JSON.stringify(obj), 'generated')[0] as Manifest;
}

/** Server-side apply that persists, failing on any refusal. */
export async function applyManifest(m: Manifest): Promise<void> {
  const r = await serverSideApply(m, { dryRun: false });
  if (r.status >= 300) throw new Error(`apply ${m.object.kind} ${m.object.metadata.name}: HTTP ${r.status} ${r.message ?? ''}`);
}

/**
 * The EndpointSlice of a Service whose endpoint is a process on this machine,
 * not a Pod: no endpoint controller writes one here, so the test does.
 */
export function localEndpointSlice(service: string, namespace: string, address: string, ports: { name: string; port: number }[]): Record<string, unknown> {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${service}-local`, namespace, labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints: [{ addresses: [address], conditions: { ready: true } }],
    ports: ports.map((p) => ({ name: p.name, port: p.port, protocol: 'TCP' })),
  };
}

/**
 * A create as the admin with strict field validation and dryRun=All. Stricter
 * than server-side apply for custom resources: under a schema node that keeps
 * unknown fields, apply accepts a misspelled field in a nested, fully
 * specified object (such as an ApiServerSource resource's `selector`), while
 * a create reports it ("strict decoding error: unknown field"). The API
 * server decodes and validates before it looks for an existing object, so a
 * 409 AlreadyExists means everything else passed.
 */
export async function createDryRun(manifest: Manifest): Promise<HttpOutcome> {
  const { collection } = await paths(manifest.object);
  const query = new URLSearchParams({ fieldManager: FIELD_MANAGER, fieldValidation: 'Strict', dryRun: 'All' });
  return outcomeOf(await adminRequest('POST', `${collection}?${query.toString()}`, manifest.text, 'application/yaml'));
}

export interface CheckOutcome {
  object: string;
  ok: boolean;
  apply: HttpOutcome;
  create: HttpOutcome;
}

const passed = (o: HttpOutcome): boolean => o.status >= 200 && o.status < 300;

/**
 * Both dry runs for one document. It passes when the apply succeeds and the
 * create succeeds, or fails only because the object already exists for real
 * (checked, not assumed).
 */
export async function dryRunCheck(manifest: Manifest): Promise<CheckOutcome> {
  const apply = await serverSideApplyDryRun(manifest);
  const create = await createDryRun(manifest);
  const createOk = passed(create) || (create.status === 409 && (await exists(manifest.object)));
  return { object: describeObject(manifest.object), ok: passed(apply) && createOk, apply, create };
}

/** Whether an object exists for real (not only in a dry run). */
export async function exists(obj: ManifestObject): Promise<boolean> {
  const { item } = await paths(obj);
  const res = await adminRequest('GET', item);
  if (res.status === 404) return false;
  if (res.status === 200) return true;
  throw new Error(`GET ${describeObject(obj)}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
}

// --- Knative CRDs on the shared control plane.

const CrdSchema = z.looseObject({
  kind: z.literal('CustomResourceDefinition'),
  metadata: z.looseObject({ name: z.string() }),
  spec: z.looseObject({
    group: z.string(),
    names: z.looseObject({ plural: z.string() }),
    versions: z.array(z.looseObject({ name: z.string(), served: z.boolean() })),
  }),
});
type Crd = z.infer<typeof CrdSchema>;

function readCrds(dir: string): Crd[] {
  const out: Crd[] = [];
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yaml')).sort()) {
    const docs: unknown[] = loadAllYaml(readFileSync(join(dir, f), 'utf8'));
    for (const d of docs) {
      const r = CrdSchema.safeParse(d);
      if (r.success) out.push(r.data);
    }
  }
  return out;
}

export interface KnativeCrds {
  versions: { serving: string; eventing: string };
  /** Names of the CustomResourceDefinitions, Serving's then Eventing's. */
  names: string[];
  /** How many of them this call created (the rest were already there). */
  created: number;
}

/**
 * Installs the pinned Knative Serving and Eventing CRDs (read from their Go
 * modules by tools/knative) on the shared control plane, unless they are
 * there already, then waits until every one is Established and every served
 * group/version lists it in discovery. They are left installed: other suites
 * may use them too, and installing them is idempotent.
 */
export async function ensureKnativeCrds(): Promise<KnativeCrds> {
  const assets = pinnedKnativeCrds();
  const crds = [...readCrds(assets.servingCrds), ...readCrds(assets.eventingCrds)];
  if (crds.length === 0) throw new Error('no Knative CRDs found');
  const created = await createCrds(crds);
  await crdsServed('Knative', crds);
  return { versions: { serving: assets.versions.serving, eventing: assets.versions.eventing }, names: crds.map((c) => c.metadata.name), created };
}

/** Creates the CRDs unless they are there already; returns how many it created. */
async function createCrds(crds: Crd[]): Promise<number> {
  const api = adminConfig().makeApiClient(ApiextensionsV1Api);
  let created = 0;
  for (const crd of crds) {
    try {
      // The client's typed body; the YAML is the authority on its shape.
      await api.createCustomResourceDefinition({ body: crd as unknown as Parameters<ApiextensionsV1Api['createCustomResourceDefinition']>[0]['body'] });
      created++;
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 409)) throw err;
    }
  }
  return created;
}

/** Waits until every CRD is Established and every served group/version lists it in discovery. */
async function crdsServed(what: string, crds: Crd[]): Promise<void> {
  const api = adminConfig().makeApiClient(ApiextensionsV1Api);
  await waitFor(`${what} CRDs Established`, async () => {
    for (const crd of crds) {
      const live = await api.readCustomResourceDefinition({ name: crd.metadata.name });
      if (!live.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return undefined;
    }
    return true;
  }, { timeoutMs: 60000 });
  // Established is not yet served: wait until discovery lists every one.
  await waitFor(`${what} CRDs in discovery`, async () => {
    for (const crd of crds) {
      for (const v of crd.spec.versions.filter((x) => x.served)) {
        const res = await adminRequest('GET', `/apis/${crd.spec.group}/${v.name}`);
        if (res.status !== 200 || !res.body.includes(`"name":"${crd.spec.names.plural}"`)) return undefined;
      }
    }
    return true;
  }, { timeoutMs: 60000 });
  discoveryCache.clear();
}

export interface PrometheusOperatorCrds {
  version: string;
  /** Names of the CustomResourceDefinitions installed. */
  names: string[];
}

/**
 * Installs the pinned Prometheus Operator's PrometheusRule and ServiceMonitor
 * CRDs (read from its Go module by tools/prometheus-operator) on the shared
 * control plane and leaves them installed, as ensureKnativeCrds does. Sent
 * as the module's exact text (server-side apply): the schemas' x-kubernetes-*
 * markers must reach the API server as written.
 */
export async function ensurePrometheusOperatorCrds(): Promise<PrometheusOperatorCrds> {
  const assets = pinnedPrometheusOperatorCrds();
  const manifests = assets.files.flatMap((f) => manifestsOf(f));
  const crds = manifests.map((m) => CrdSchema.parse(loadAllYaml(m.text)[0]));
  if (crds.length !== assets.files.length) throw new Error(`expected one CRD in each of ${assets.files.join(', ')}, found ${crds.length}`);
  for (const m of manifests) await applyManifest(m);
  await crdsServed(`Prometheus Operator ${assets.version}`, crds);
  return { version: assets.version, names: crds.map((c) => c.metadata.name) };
}

// --- What Knative Eventing does with an ApiServerSource's resources.

/**
 * apimachinery's meta.UnsafeGuessKindToResource, which Knative Eventing v1.23
 * uses to turn an ApiServerSource resource's kind into a resource name, both
 * for its permission check and for the receive adapter's configuration. It
 * gets "Gateway" wrong ("gatewaies").
 */
export function guessKindToResource(kind: string): string {
  const singular = kind.toLowerCase();
  if (singular === '') return '';
  // unpluralizedSuffixes
  if (singular.endsWith('endpoints')) return singular;
  if (singular.endsWith('s')) return `${singular}es`;
  if (singular.endsWith('y')) return `${singular.slice(0, -1)}ies`;
  return `${singular}s`;
}

/** The resource names (plurals, no subresources) that discovery lists for a group/version. */
export async function servedResources(apiVersion: string): Promise<string[]> {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const res = await adminRequest('GET', base);
  if (res.status !== 200) throw new Error(`discovery of ${apiVersion} failed: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  return ApiResourceListSchema.parse(JSON.parse(res.body)).resources.map((r) => r.name).filter((n) => !n.includes('/'));
}
