// The release's install files: the kustomize install of infra/ (and its
// variants) with the controller image pinned by digest and the release's
// version as an annotation on every object, rendered by the pinned kustomize
// from a throwaway overlay, exactly as an operator's own overlay would; and
// the optional monitoring component (infra/monitoring/) as a file of its own,
// with kube-state-metrics by digest and the alerts' runbook address.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { dump, load, loadAll } from 'js-yaml';
import { z } from 'zod';
import { generatedFiles, MONITORING_DIR } from '../monitoring/files.mts';
import { checkRunbookBase } from '../monitoring/rules.mts';

/** The annotation every object of a release's install file carries. */
export const VERSION_ANNOTATION = 'meridio-2.nordix.org/version';
/** The name the kustomize install gives the controller image (infra/kustomization.yaml, images:). */
export const CONTROLLER_IMAGE_NAME = 'meridio-2-gateway-controller';
/** The name it gives the gateway-watch ContainerSource's image, Knative's ApiServerSource adapter. */
export const ADAPTER_IMAGE_NAME = 'knative-apiserver-receive-adapter';
/** The ConfigMap the install generates from the LB template (infra/kustomization.yaml, configMapGenerator). */
export const LB_TEMPLATE_CONFIGMAP = 'meridio-2-lb-template';
/** The release overlay's own copy of the LB template, its images pinned (lb-images.mts). */
const LB_TEMPLATE_OVERLAY_FILE = 'lb-deployment.pinned.yaml';

export interface InstallVariant {
  /** The file written into the release directory. */
  file: string;
  /** Components of infra/ added to the default install (paths relative to infra/). */
  components: readonly string[];
  /** One line for the release notes and docs. */
  what: string;
}

export const INSTALL_VARIANTS: readonly InstallVariant[] = [
  { file: 'install.yaml', components: [], what: 'the default install (infra/)' },
  { file: 'install-beside-meridio-2.yaml', components: ['beside-meridio-2'], what: "next to Meridio-2's other controllers (infra/beside-meridio-2)" },
];

export interface PinnedImage {
  /** registry/repository, without tag or digest. */
  repository: string;
  /** sha256:<hex> */
  digest: string;
}

/** The LB template the release ships: its ConfigMap key, and the text (images pinned). */
export interface ReleasedTemplate {
  key: string;
  text: string;
}

/**
 * The overlay that pins the image and annotates the release (kustomization.yaml
 * text). `infraDir` is relative to the overlay's directory: kustomize refuses
 * absolute roots. With `lbTemplateKey`, the LB template ConfigMap's key is
 * replaced by the overlay's file LB_TEMPLATE_OVERLAY_FILE (a merge: the
 * generator's options and labels stay; the name's hash is the new content's,
 * and the Service mounts that name).
 */
export function releaseOverlay(infraDir: string, variant: InstallVariant, image: PinnedImage, version: string, adapter?: PinnedImage, lbTemplateKey?: string): string {
  return dump({
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [infraDir],
    ...(variant.components.length ? { components: variant.components.map((c) => join(infraDir, c)) } : {}),
    ...(lbTemplateKey !== undefined ? { configMapGenerator: [{ name: LB_TEMPLATE_CONFIGMAP, behavior: 'merge', files: [`${lbTemplateKey}=${LB_TEMPLATE_OVERLAY_FILE}`] }] } : {}),
    images: [
      { name: CONTROLLER_IMAGE_NAME, newName: image.repository, digest: image.digest },
      ...(adapter ? [{ name: ADAPTER_IMAGE_NAME, newName: adapter.repository, digest: adapter.digest }] : []),
    ],
    commonAnnotations: { [VERSION_ANNOTATION]: version },
  }, { lineWidth: -1 });
}

/** `<repository>@sha256:<hex>` split; anything else is refused (a release pins by digest). */
export function pinnedImage(ref: string): PinnedImage {
  const m = ref.match(/^([^@\s]+?)(?::[^:/@]+)?@(sha256:[0-9a-f]{64})$/);
  if (!m?.[1] || !m[2]) throw new Error(`${ref}: not an image reference by digest (<registry>/<repository>@sha256:<digest>)`);
  return { repository: m[1], digest: m[2] };
}

/** Renders one variant with the kustomize binary given; returns the YAML stream. */
export function renderInstall(kustomize: string, infraDir: string, variant: InstallVariant, image: PinnedImage, version: string, adapter?: PinnedImage, lbTemplate?: ReleasedTemplate): string {
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-release-'));
  try {
    if (lbTemplate) writeFileSync(join(dir, LB_TEMPLATE_OVERLAY_FILE), lbTemplate.text);
    writeFileSync(join(dir, 'kustomization.yaml'), releaseOverlay(relative(dir, infraDir), variant, image, version, adapter, lbTemplate?.key));
    return execFileSync(kustomize, ['build', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// --- The monitoring component (infra/monitoring/), install-monitoring.yaml.

/** The release file of the monitoring component, applied after install.yaml. */
export const MONITORING_FILE = 'install-monitoring.yaml';
/** The component's directory under infra/. */
export const MONITORING_COMPONENT = 'monitoring';
/** Its kube-state-metrics Deployment's file, in that directory. */
const KSM_FILE = 'kube-state-metrics.yaml';

export interface MonitoringRelease {
  /** kube-state-metrics, by digest: the component's Deployment runs it. */
  kubeStateMetrics: PinnedImage;
  /**
   * Where docs/operations.md is published: each alert's runbook_url is this
   * address and its anchor. Without it the alerts name the runbook by its
   * path (annotation `runbook: docs/operations.md#<anchor>`).
   */
  runbookBase?: string;
}

const ImageOfDeployment = z.looseObject({
  kind: z.literal('Deployment'),
  spec: z.looseObject({ template: z.looseObject({ spec: z.looseObject({ containers: z.array(z.looseObject({ name: z.string(), image: z.string() })).length(1) }) }) }),
});

/**
 * The kube-state-metrics image the component names (its Deployment's one
 * container), without the tag: what kustomize's images transformer matches.
 */
export function shippedKubeStateMetricsImage(infraDir: string): { name: string; tag: string } {
  const docs = loadAll(readFileSync(join(infraDir, MONITORING_COMPONENT, KSM_FILE), 'utf8')).filter((d) => d != null);
  const deployments = docs.flatMap((d) => { const r = ImageOfDeployment.safeParse(d); return r.success ? [r.data] : []; });
  if (deployments.length !== 1) throw new Error(`${MONITORING_COMPONENT}/${KSM_FILE}: expected one Deployment, found ${deployments.length}`);
  const image = deployments[0]!.spec.template.spec.containers[0]!.image;
  const m = /^([^@\s]+?):([^:/@]+)$/.exec(image);
  if (!m?.[1] || !m[2]) throw new Error(`${MONITORING_COMPONENT}/${KSM_FILE}: image ${image} is not <name>:<tag>`);
  return { name: m[1], tag: m[2] };
}

/** The install's namespace: infra/kustomization.yaml's `namespace`, where install.yaml puts everything. */
export function installNamespace(infraDir: string): string {
  return z.object({ namespace: z.string().min(1) }).parse(load(readFileSync(join(infraDir, 'kustomization.yaml'), 'utf8'))).namespace;
}

/**
 * The overlay of the monitoring component alone (kustomization.yaml text):
 * kube-state-metrics pinned by digest, the version on every object.
 * `componentDir` is relative to the overlay's directory.
 */
export function monitoringOverlay(componentDir: string, ksmName: string, monitoring: MonitoringRelease, version: string): string {
  return dump({
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    components: [componentDir],
    images: [{ name: ksmName, newName: monitoring.kubeStateMetrics.repository, digest: monitoring.kubeStateMetrics.digest }],
    commonAnnotations: { [VERSION_ANNOTATION]: version },
  }, { lineWidth: -1 });
}

const RenderedSchema = z.looseObject({
  kind: z.string(),
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
  subjects: z.array(z.looseObject({ kind: z.string(), namespace: z.string().optional() })).optional(),
});
const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding']);

/**
 * Renders install-monitoring.yaml: the monitoring component of `infraDir`
 * alone (what install.yaml does not hold), from a copy whose generated rule
 * files are written anew for the release's runbook address
 * (tools/monitoring/files.mts; without an address they are the committed
 * files). Every object must be in the install's namespace, as install.yaml's
 * are, the ServiceAccount the ClusterRoleBinding grants included: a
 * component's objects name it themselves.
 */
export function renderMonitoring(kustomize: string, infraDir: string, monitoring: MonitoringRelease, version: string): string {
  if (monitoring.runbookBase !== undefined) checkRunbookBase(monitoring.runbookBase);
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-release-monitoring-'));
  try {
    const component = join(dir, MONITORING_COMPONENT);
    cpSync(join(infraDir, MONITORING_COMPONENT), component, { recursive: true });
    for (const [path, text] of Object.entries(generatedFiles(monitoring.runbookBase !== undefined ? { runbookBase: monitoring.runbookBase } : {}))) {
      if (!path.startsWith(`${MONITORING_DIR}/`)) throw new Error(`${path}: a generated file outside ${MONITORING_DIR}`);
      writeFileSync(join(component, path.slice(MONITORING_DIR.length + 1)), text);
    }
    writeFileSync(join(dir, 'kustomization.yaml'), monitoringOverlay(`./${MONITORING_COMPONENT}`, shippedKubeStateMetricsImage(infraDir).name, monitoring, version));
    const yaml = execFileSync(kustomize, ['build', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    const namespace = installNamespace(infraDir);
    const elsewhere = loadAll(yaml).filter((d) => d != null).flatMap((d) => {
      const o = RenderedSchema.parse(d);
      const where = [
        ...(CLUSTER_SCOPED.has(o.kind) ? [] : [o.metadata.namespace ?? '(none)']),
        ...(o.subjects ?? []).filter((s) => s.kind === 'ServiceAccount').map((s) => s.namespace ?? '(none)'),
      ];
      return where.filter((ns) => ns !== namespace).map((ns) => `${o.kind} ${o.metadata.name} names namespace ${ns}`);
    });
    if (elsewhere.length > 0) throw new Error(`${MONITORING_FILE}: not in the install's namespace ${namespace}: ${elsewhere.join('; ')}`);
    return yaml;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ConfigMapSchema = z.looseObject({
  kind: z.literal('ConfigMap'),
  metadata: z.looseObject({ name: z.string() }),
  data: z.record(z.string(), z.string()).optional(),
});
const KnativeServiceSchema = z.looseObject({
  kind: z.literal('Service'),
  apiVersion: z.literal('serving.knative.dev/v1'),
  spec: z.looseObject({ template: z.looseObject({ spec: z.looseObject({ volumes: z.array(z.looseObject({ configMap: z.looseObject({ name: z.string() }).optional() })).optional() }) }) }),
});

/**
 * The LB template ConfigMap of a rendered install (the one the Knative
 * Service mounts, `meridio-2-lb-template-<hash>`) and its text under `key`.
 */
export function installedTemplate(yaml: string, key: string): { configMap: string; text: string } {
  const docs = loadAll(yaml).filter((d) => d != null);
  const maps = docs.flatMap((d) => { const r = ConfigMapSchema.safeParse(d); return r.success && r.data.metadata.name.startsWith(`${LB_TEMPLATE_CONFIGMAP}-`) ? [r.data] : []; });
  const services = docs.flatMap((d) => { const r = KnativeServiceSchema.safeParse(d); return r.success ? [r.data] : []; });
  if (maps.length !== 1 || services.length !== 1) throw new Error(`expected one ${LB_TEMPLATE_CONFIGMAP} ConfigMap and one Knative Service, found ${maps.length} and ${services.length}`);
  const map = maps[0]!;
  const mounted = (services[0]!.spec.template.spec.volumes ?? []).map((v) => v.configMap?.name);
  if (!mounted.includes(map.metadata.name)) throw new Error(`the Knative Service does not mount ${map.metadata.name} (it mounts ${mounted.filter(Boolean).join(', ') || 'no ConfigMap'})`);
  const text = map.data?.[key];
  if (text === undefined) throw new Error(`${map.metadata.name} has no key ${key}`);
  return { configMap: map.metadata.name, text };
}
