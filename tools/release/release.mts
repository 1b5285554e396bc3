#!/usr/bin/env node
// `npm run release -- <registry>/<repository>`: one release an operator can
// pin. Builds the controller image from the repository's Dockerfile with
// buildah (tools/image), tags it with package.json's version, pushes it,
// reads the digest back from the registry, and writes into dist/release/:
//
//   install.yaml, install-beside-meridio-2.yaml   the kustomize install with
//       the image by digest, the LB template's images by digest (its
//       ConfigMap, lb-images.mts) and the version annotation on every object
//       (install-files.mts)
//   install-monitoring.yaml   the optional monitoring component
//       (infra/monitoring/: kube-state-metrics by digest, alerts, dashboard),
//       applied after install.yaml; only with --kube-state-metrics
//   sbom.cdx.json   CycloneDX SBOM of the image as pulled back by its digest,
//       written by syft (tools/syft): the base's Debian packages, Node.js, and
//       the npm packages bundled into the function (/app/node_modules)
//   image.txt       <registry>/<repository>:<version>@sha256:<digest>
//   kubectl-meridio-linux-<arch>, kubectl-meridio-linux-<arch>.tar.gz, meridio.yaml
//       the kubectl plugin as one executable per platform (amd64, arm64;
//       tools/plugin), bare and archived, and the krew manifest of the
//       archives (plugin-files.mts)
//   RELEASE-NOTES.md   what the release holds and what it was made with:
//       the images it pins, and what it leaves to the installer
//   SHA256SUMS      sha256sum's format, of each file above
//
// Usage: npm run release -- <registry>/<repository> [options]
//   --local-base         build on the locally assembled node:24-slim stand-in
//                        (tools/image/base.mts), in the project's buildah store
//   --node-image <ref>   the Dockerfile's NODE_IMAGE, e.g. node:24-slim@sha256:<digest>
//   --image <ref>        release this already built image instead of building
//                        (it must carry this version's label)
//   --receive-adapter <ref@sha256:...>   the ApiServerSource receive adapter
//                        of the Knative Eventing the release is for (its
//                        APISERVER_RA_IMAGE), pinned into the install files'
//                        gateway-watch ContainerSource; without it they name
//                        knative-apiserver-receive-adapter:v1.23.0, to be set
//                        at install (docs/install.md)
//   --kube-state-metrics <ref@sha256:...>   the kube-state-metrics image the
//                        monitoring component runs, by digest (a mirror of
//                        registry.k8s.io/kube-state-metrics/kube-state-metrics
//                        at the version the component is tested with); without
//                        it the release has no install-monitoring.yaml, and its
//                        notes say so
//   --runbook-base <url> where docs/operations.md is published: the alerts'
//                        runbook_url is <url>#<anchor>; without it they name
//                        the runbook by its path (runbook: docs/operations.md#<anchor>)
//                        and the notes say so; only with --kube-state-metrics
//   --lb-image <template image>=<ref>   resolve an image of the LB template
//                        (infra/templates/lb-deployment.yaml; its reference
//                        or repository) from ref instead (a mirror, another
//                        tag, a digest): the install files run ref's
//                        repository by the digest found; repeatable
//   --keep-lb-image-tag <template image>   do not pin that image: the install
//                        files name it by its tag, and the notes say so;
//                        repeatable. Without either, each image of the LB
//                        template is resolved as the template names it, and
//                        one that cannot be resolved fails the release
//                        (before anything is built or pushed), naming it
//   --plugin-download-base <url>   where the release's files are published
//                        (a release's download folder): the krew manifest's
//                        uri of each archive is <url>/<archive>; without it
//                        the uri is the archive's name, krew installs it only
//                        with --archive, and the notes say so
//   --tls-verify=false   a registry without TLS (a loopback test registry),
//                        for the controller image and the LB images alike
//   --out <dir>          instead of dist/release
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { logger, runAsScript, type Log } from '../go-build.mts';
import { buildForRegistry } from '../image/build-for-registry.mts';
import { imageExists, runCommand, storageArgs } from '../image/buildah.mts';
import { ensureHostTools, IMAGE_TOOLS, RELEASE_TOOLS } from '../image/host-tools.mts';
import { ensureGoTool } from '../go-tools.mts';
import { repoRoot } from '../harness/repo-root.ts';
import { checkRunbookBase, RUNBOOK_DOC } from '../monitoring/rules.mts';
import { INSTALL_VARIANTS, installedTemplate, installNamespace, LB_TEMPLATE_CONFIGMAP, MONITORING_FILE, pinnedImage, renderInstall, renderMonitoring, shippedKubeStateMetricsImage, type MonitoringRelease, type PinnedImage } from './install-files.mts';
import { buildPreviousRelease, previousRelease } from './previous-release.mts';
import { runUpgradeImpact, upgradeMeasured, upgradeNotes, type ImpactReport, type UpgradeMeasured } from './upgrade-notes.mts';
import { checkDownloadBase, PLUGIN_FILE_LINES, pluginNotes, writePluginFiles, type PluginRelease } from './plugin-files.mts';
import { buildPlugin } from '../plugin/build.mts';
import { PLUGIN_PLATFORMS } from '../plugin/node-binaries.mts';
import { lbTemplateSource, parseLbImageOptions, pinnedRef, pinTemplate, planLbImages, resolveLbImages, skopeoManifest, templateImages, type LbImage, type LbImageOptions } from './lb-images.mts';

const log = logger('release');

/** The label the Dockerfile sets from its VERSION argument. */
export const VERSION_LABEL = 'org.opencontainers.image.version';

const OptionsSchema = z.object({
  repository: z.string().regex(/^[a-z0-9.-]+(?::\d+)?\/[a-z0-9._/-]+$/, 'a repository without tag or digest, such as registry.example.com/team/meridio-2-gateway-controller'),
  localBase: z.boolean(),
  nodeImage: z.string().min(1).optional(),
  image: z.string().min(1).optional(),
  receiveAdapter: z.string().min(1).optional(),
  kubeStateMetrics: z.string().min(1).optional(),
  runbookBase: z.string().min(1).optional(),
  pluginDownloadBase: z.string().min(1).optional(),
  tlsVerify: z.boolean(),
  out: z.string().min(1),
});
export type ReleaseOptions = z.infer<typeof OptionsSchema> & { lbImages: LbImageOptions };

export function parseReleaseOptions(argv: string[]): ReleaseOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'local-base': { type: 'boolean', default: false },
      'node-image': { type: 'string' },
      image: { type: 'string' },
      'receive-adapter': { type: 'string' },
      'kube-state-metrics': { type: 'string' },
      'runbook-base': { type: 'string' },
      'plugin-download-base': { type: 'string' },
      'lb-image': { type: 'string', multiple: true, default: [] },
      'keep-lb-image-tag': { type: 'string', multiple: true, default: [] },
      'tls-verify': { type: 'string', default: 'true' },
      out: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new Error('usage: npm run release -- <registry>/<repository> [--local-base | --node-image <ref> | --image <ref>] [--receive-adapter <ref@sha256:...>] [--kube-state-metrics <ref@sha256:...> [--runbook-base <url>]] [--plugin-download-base <url>] [--lb-image <template image>=<ref>]... [--keep-lb-image-tag <template image>]... [--tls-verify=false] [--out <dir>]');
  const tls = values['tls-verify'];
  if (tls !== 'true' && tls !== 'false') throw new Error(`--tls-verify: true or false, not ${tls}`);
  const parsed = OptionsSchema.safeParse({
    repository: positionals[0],
    localBase: values['local-base'],
    nodeImage: values['node-image'],
    image: values.image,
    receiveAdapter: values['receive-adapter'],
    kubeStateMetrics: values['kube-state-metrics'],
    runbookBase: values['runbook-base'],
    pluginDownloadBase: values['plugin-download-base'],
    tlsVerify: tls === 'true',
    out: values.out ?? join(repoRoot(), 'dist', 'release'),
  });
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${i.path.join('.') || 'argument'}: ${i.message}`).join('; '));
  const chosen = [parsed.data.localBase, parsed.data.nodeImage !== undefined, parsed.data.image !== undefined].filter(Boolean).length;
  if (chosen > 1) throw new Error('--local-base, --node-image and --image each choose the image: give one');
  if (parsed.data.receiveAdapter) pinnedImage(parsed.data.receiveAdapter);
  if (parsed.data.kubeStateMetrics) {
    try {
      pinnedImage(parsed.data.kubeStateMetrics);
    } catch (err) {
      throw new Error(`--kube-state-metrics: ${(err as Error).message}; a release pins every image it names by digest (a tag can be moved)`);
    }
  }
  if (parsed.data.runbookBase !== undefined) {
    if (!parsed.data.kubeStateMetrics) throw new Error('--runbook-base is for the alerts of install-monitoring.yaml, which only a release with --kube-state-metrics <ref@sha256:...> has');
    try {
      checkRunbookBase(parsed.data.runbookBase);
    } catch (err) {
      throw new Error(`--runbook-base: ${(err as Error).message}`);
    }
  }
  if (parsed.data.pluginDownloadBase !== undefined) {
    try {
      checkDownloadBase(parsed.data.pluginDownloadBase);
    } catch (err) {
      throw new Error(`--plugin-download-base: ${(err as Error).message}`);
    }
  }
  return { ...parsed.data, lbImages: parseLbImageOptions(values['lb-image'], values['keep-lb-image-tag']) };
}

/** The version of this checkout: package.json's, the one place it is set. */
export function releaseVersion(root: string = repoRoot()): string {
  const { version } = z.object({ version: z.string().regex(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/, 'a semantic version') }).parse(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')));
  return version;
}

/** sha256sum's output for the files: `<hex>  <name>` lines, sorted by name. */
export function sha256sums(files: ReadonlyArray<{ name: string; content: Buffer }>): string {
  return [...files]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((f) => `${createHash('sha256').update(f.content).digest('hex')}  ${f.name}\n`)
    .join('');
}

const DigestSchema = z.string().regex(/^sha256:[0-9a-f]{64}$/);
const OciIndexSchema = z.object({ manifests: z.array(z.object({ digest: DigestSchema })).min(1) });

export interface Release {
  version: string;
  /** <repository>:<version>@<digest> */
  image: string;
  digest: string;
  lbImages: LbImage[];
  dir: string;
  files: string[];
}

/** What the release's files are made from, once the image is pushed. */
export interface ReleaseInput {
  /** The repository root: infra/ is rendered from it. */
  root: string;
  kustomize: string;
  version: string;
  /** The controller image's repository and the digest the registry serves its version's tag as. */
  repository: string;
  digest: string;
  adapter?: PinnedImage;
  /** Without it there is no install-monitoring.yaml. */
  monitoring?: MonitoringRelease;
  /** What the release did with each image of the LB template (resolveLbImages): the install files' template names these. */
  lbImages: readonly LbImage[];
  /** The kubectl plugin's executables (tools/plugin); without it the release has no plugin files. */
  plugin?: PluginRelease;
  /** What upgrading from the previous release does to LB Pods (upgrade-notes.mts); without it the notes say no comparison was made. */
  upgradeImpact?: ImpactReport;
  /** The upgrade e2e's figures for an upgrade from the same previous release (bench/results/upgrade.json). */
  upgradeMeasured?: UpgradeMeasured;
}

export const NOTES_FILE = 'RELEASE-NOTES.md';

const FILE_LINES: ReadonlyArray<[string, string]> = [
  ...INSTALL_VARIANTS.map((v): [string, string] => [v.file, v.what]),
  [MONITORING_FILE, 'the optional monitoring component (infra/monitoring/): kube-state-metrics for the Gateways\' conditions, the alerts (PrometheusRule), a ServiceMonitor, the Grafana dashboard; apply it after install.yaml'],
  ...PLUGIN_FILE_LINES,
  ['sbom.cdx.json', 'the controller image\'s bill of materials (CycloneDX JSON, by syft)'],
  ['image.txt', 'the controller image, `<repository>:<version>@sha256:<digest>`'],
  [NOTES_FILE, 'this file'],
  ['SHA256SUMS', 'the SHA-256 of each file above'],
];

/** RELEASE-NOTES.md: what the release holds, the images it pins, and what it leaves to the installer. */
export function releaseNotes(input: Omit<ReleaseInput, 'root' | 'kustomize'> & { namespace: string; kubeStateMetricsTested: string; files: readonly string[] }): string {
  const { version, monitoring } = input;
  const code = (s: string): string => `\`${s}\``;
  const lines = [
    `# Meridio-2 Gateway controller ${version}`,
    '',
    `- Controller image: ${code(`${input.repository}:${version}@${input.digest}`)}; the install files run it by digest, ${code(`${input.repository}@${input.digest}`)}.`,
    `- Namespace: everything namespaced is in ${code(input.namespace)}, serving all namespaces. For another namespace or a narrower scope, render from source with the namespace scope (docs/install.md, "Namespace scope: one input").`,
    `- What changed: CHANGELOG.md, ${version}.`,
    '',
    '## Files',
    '',
    '| file | what |',
    '|---|---|',
    ...FILE_LINES.filter(([f]) => input.files.includes(f)).map(([f, what]) => `| ${code(f)} | ${what} |`),
    '',
    '## Knative ApiServerSource adapter',
    '',
    input.adapter
      ? `Pinned: the gateway-watch ContainerSource runs ${code(`${input.adapter.repository}@${input.adapter.digest}`)}.`
      : 'Not pinned (made without `--receive-adapter`): the gateway-watch ContainerSource names `knative-apiserver-receive-adapter` by tag; point it at your Knative Eventing\'s `APISERVER_RA_IMAGE` when installing (docs/install.md, "Install a release", step 3).',
    '',
    ...lbImageNotes(input.lbImages),
    ...upgradeNotes(input.upgradeImpact, input.upgradeMeasured),
    ...(input.plugin ? pluginNotes(input.plugin) : []),
    '## Monitoring',
    '',
  ];
  if (!monitoring) {
    lines.push(
      `Not in this release: ${code(MONITORING_FILE)} was left out because the release was made without \`--kube-state-metrics <ref@sha256:...>\` (the monitoring component runs kube-state-metrics, which a release pins by digest). Render infra/monitoring/ from source (docs/install.md, "Alerts and the dashboard"), or make the release with that option.`,
    );
  } else {
    lines.push(
      `${code(MONITORING_FILE)} runs kube-state-metrics ${code(`${monitoring.kubeStateMetrics.repository}@${monitoring.kubeStateMetrics.digest}`)} (the component's configuration is tested with kube-state-metrics ${input.kubeStateMetricsTested}). It needs the Prometheus Operator's CRDs (PrometheusRule, ServiceMonitor); keep the ServiceMonitor's job, \`meridio-2-kube-state-metrics\`: the alert MeridioKubeStateMetricsDown reads it.`,
      '',
      monitoring.runbookBase !== undefined
        ? `Runbooks: each alert's \`runbook_url\` is ${code(`${monitoring.runbookBase}#<alert anchor>`)}.`
        : `Runbooks: named by their path, annotation \`runbook: ${RUNBOOK_DOC}#<alert anchor>\` (the release was made without \`--runbook-base <url>\`, so the alerts carry no address: ${RUNBOOK_DOC} is in the repository at this version).`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The notes' section on the LB template's images: each with its digest, or that it was kept by tag; and that a change of them rolls LB Pods. */
export function lbImageNotes(images: readonly LbImage[]): string[] {
  const code = (s: string): string => `\`${s}\``;
  const kept = images.filter((i) => i.kept);
  const rows = images.map((i) => {
    const runs = i.kept
      ? `**not pinned**: by its tag, as the template names it (made with ${code(`--keep-lb-image-tag ${i.image}`)})`
      : `${code(pinnedRef(i.pinned))}${i.from !== i.image ? `, resolved from ${code(i.from)}` : ''}${i.platforms !== undefined ? ` (an image index of ${i.platforms} platform manifests, pinned by the index's digest)` : ''}`;
    return `| ${code(i.image)} | ${i.containers.join(', ')} | ${runs} |`;
  });
  return [
    '## Load-balancer images (the data plane)',
    '',
    `The LB template (the ConfigMap ${code(`${LB_TEMPLATE_CONFIGMAP}-<hash>`)} of the install files, infra/templates/lb-deployment.yaml of this version), from which the function renders each Gateway's LB Deployment, runs these images, resolved to digests when the release was made:`,
    '',
    '| image in the template | containers | the install files run |',
    '|---|---|---|',
    ...rows,
    '',
    kept.length === 0
      ? 'Every LB Pod rendered from this release runs exactly these images, whatever happens to their tags later.'
      : `Not pinned: ${kept.map((i) => code(i.image)).join(', ')}. An LB Pod runs whatever ${kept.length === 1 ? 'that tag names' : 'those tags name'} when its node pulls it, so two LB Pods of this release may run different builds; the images above that are pinned run exactly as released.`,
    '',
    'An image reference is part of each LB Deployment\'s pod template. Applying this release over an install whose LB Deployments name other references (another release\'s digests, or tags: an install from source, or Meridio-2\'s own, which `install-beside-meridio-2.yaml` takes over) changes every LB Deployment\'s pod template on its next reconcile, and each Gateway\'s LB Pods roll once; that is expected, and `LB_ROLLOUT_BUDGET` limits how many LB Deployments roll at once (docs/operations.md, "Rollout budget"). Over a release that pinned the same digests, the images roll nothing. To take over from Meridio-2 without restarting an LB Pod, run Meridio-2\'s template (docs/install.md, "Migration, step by step") or make the release with `--keep-lb-image-tag` for each image.',
    '',
  ];
}

/** The comment the released LB template starts with. */
export function pinnedTemplateHeader(version: string, images: readonly LbImage[]): string[] {
  const kept = images.filter((i) => i.kept).map((i) => i.image);
  return [
    `Meridio-2 Gateway controller ${version}, as released (npm run release): the images`,
    'below are pinned by digest; RELEASE-NOTES.md names what each was resolved from.',
    ...(kept.length > 0 ? [`Kept by tag at the release's request: ${kept.join(', ')}.`] : []),
    'Changing an image changes every LB pod template: the LB Pods roll.',
    '',
  ];
}

/**
 * Writes the install files, image.txt, the notes and SHA256SUMS into `out`
 * (which may hold the SBOM already); returns every file of `out`, sorted.
 */
/** The LB template the release ships: infra/'s, with its images as the release resolved them. */
export function releaseTemplate(root: string, version: string, lbImages: readonly LbImage[]): { key: string; text: string } {
  const template = lbTemplateSource(join(root, 'infra'));
  return {
    key: template.key,
    text: pinTemplate(readFileSync(template.file, 'utf8'), lbImages, { source: relative(root, template.file), header: pinnedTemplateHeader(version, lbImages) }),
  };
}

export function writeReleaseFiles(out: string, input: ReleaseInput): string[] {
  const infra = join(input.root, 'infra');
  const image: PinnedImage = { repository: input.repository, digest: input.digest };
  const lbTemplate = releaseTemplate(input.root, input.version, input.lbImages);
  for (const variant of INSTALL_VARIANTS) {
    const yaml = renderInstall(input.kustomize, infra, variant, image, input.version, input.adapter, lbTemplate);
    // What the function reads at TEMPLATE_PATH is the pinned template, mounted from the ConfigMap the Service names.
    if (installedTemplate(yaml, lbTemplate.key).text !== lbTemplate.text) throw new Error(`${variant.file}: the LB template ConfigMap does not hold the pinned template`);
    writeFileSync(join(out, variant.file), yaml);
  }
  if (input.plugin) writePluginFiles(out, { version: input.version, ...input.plugin });
  if (input.monitoring) writeFileSync(join(out, MONITORING_FILE), renderMonitoring(input.kustomize, infra, input.monitoring, input.version));
  writeFileSync(join(out, 'image.txt'), `${input.repository}:${input.version}@${input.digest}\n`);
  const files = [...new Set([...readdirSync(out), NOTES_FILE, 'SHA256SUMS'])].sort();
  writeFileSync(join(out, NOTES_FILE), releaseNotes({ ...input, namespace: installNamespace(infra), kubeStateMetricsTested: shippedKubeStateMetricsImage(infra).tag, files }));
  const summed = files.filter((f) => f !== 'SHA256SUMS');
  writeFileSync(join(out, 'SHA256SUMS'), sha256sums(summed.map((name) => ({ name, content: readFileSync(join(out, name)) }))));
  return files;
}

/** The buildah global flags of the store that holds `ref`: the project's, else the machine's default. */
async function storeOf(ref: string, log: Log): Promise<string[]> {
  if (await imageExists(ref, log)) return storageArgs();
  return [];
}

export async function release(opts: ReleaseOptions, log: Log): Promise<Release> {
  const root = repoRoot();
  const version = releaseVersion(root);
  const tagged = `${opts.repository}:${version}`;
  await ensureHostTools([...IMAGE_TOOLS, ...RELEASE_TOOLS], log);
  const adapter: PinnedImage | undefined = opts.receiveAdapter ? pinnedImage(opts.receiveAdapter) : undefined;
  const monitoring: MonitoringRelease | undefined = opts.kubeStateMetrics
    ? { kubeStateMetrics: pinnedImage(opts.kubeStateMetrics), ...(opts.runbookBase !== undefined ? { runbookBase: opts.runbookBase } : {}) }
    : undefined;

  // 0. The LB template's images, by digest: before anything is built, pushed
  // or written, so that an image that cannot be resolved costs nothing.
  const template = lbTemplateSource(join(root, 'infra'));
  const plan = planLbImages(templateImages(readFileSync(template.file, 'utf8'), relative(root, template.file)), opts.lbImages);
  log(`resolving the LB template's images: ${plan.map((p) => (p.keep ? `${p.image} (kept by tag)` : p.from)).join(', ')}`);
  const lbImages = await resolveLbImages(plan, skopeoManifest(opts.tlsVerify));
  for (const i of lbImages) log(i.kept ? `LB image ${i.image}: kept by tag (--keep-lb-image-tag; the notes say so)` : `LB image ${i.image}: ${pinnedRef(i.pinned)}`);
  // What upgrading from the previous release does to LB Pods, with this release's template.
  const previous = previousRelease();
  const upgradeImpact = previous ? runUpgradeImpact({ root, previous: buildPreviousRelease(log), template: releaseTemplate(root, version, lbImages).text, log }) : undefined;
  const measured = upgradeImpact ? upgradeMeasured(root, upgradeImpact.previousVersion) : undefined;
  if (upgradeImpact) log(`upgrading from ${upgradeImpact.previousVersion}: ${upgradeImpact.rows.filter((r) => r.rolls).length} of ${upgradeImpact.rows.length} compared inputs roll their LB Pods (the notes say which and why)`);
  const [kustomize, syft] = [await ensureGoTool('kustomize'), await ensureGoTool('syft')];
  // The plugin's executables, before the image: a failure here pushes nothing.
  const built = await buildPlugin({ platforms: PLUGIN_PLATFORMS, out: join(root, 'dist', 'plugin'), log });
  const plugin: PluginRelease = { node: built.node, executables: built.executables, ...(opts.pluginDownloadBase !== undefined ? { downloadBase: opts.pluginDownloadBase } : {}) };

  // 1. The image, tagged with the version.
  let store: string[];
  if (opts.image) {
    store = await storeOf(opts.image, log);
    await runCommand('buildah', [...store, 'tag', opts.image, tagged], { log });
  } else {
    await buildForRegistry({ ref: tagged, push: false, localBase: opts.localBase, tool: 'buildah', ...(opts.nodeImage ? { nodeImage: opts.nodeImage } : {}) });
    store = opts.localBase ? storageArgs() : [];
  }
  const label = (await runCommand('buildah', [...store, 'inspect', '--type', 'image', '--format', `{{index .OCIv1.Config.Labels "${VERSION_LABEL}"}}`, tagged], { log })).stdout.trim();
  if (label !== version) throw new Error(`${tagged} has ${VERSION_LABEL}=${JSON.stringify(label)}, package.json says ${version}: build it from this checkout's Dockerfile (its VERSION argument must equal package.json's version)`);

  // 2. Push, and read the digest back from the registry.
  const tls = `--tls-verify=${opts.tlsVerify}`;
  const scratch = mkdtempSync(join(tmpdir(), 'meridio2-release-'));
  try {
    log(`pushing ${tagged}`);
    await runCommand('buildah', [...store, 'push', tls, '--digestfile', join(scratch, 'digest'), tagged, `docker://${tagged}`], { log, echo: /./ });
    const pushed = DigestSchema.parse(readFileSync(join(scratch, 'digest'), 'utf8').trim());
    const remote = DigestSchema.parse((await runCommand('skopeo', ['inspect', tls, '--format', '{{.Digest}}', `docker://${tagged}`], { log })).stdout.trim());
    if (remote !== pushed) throw new Error(`the registry serves ${tagged} as ${remote}, the push reported ${pushed}: another push of this tag raced this one`);
    const byDigest = `${opts.repository}@${remote}`;

    // 3. The SBOM, of the image pulled back by its digest (skopeo keeps the
    // registry's bytes, so the layout's manifest is the digest's).
    const layout = join(scratch, 'oci');
    await runCommand('skopeo', ['copy', tls, `docker://${byDigest}`, `oci:${layout}:image`], { log });
    const index = OciIndexSchema.parse(JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')));
    if (index.manifests[0]?.digest !== remote) throw new Error(`pulled ${byDigest}, got manifest ${index.manifests[0]?.digest}`);
    const out = resolve(opts.out);
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    log(`writing the SBOM with syft ${syft.version}`);
    await runCommand(syft.binary, ['scan', `oci-dir:${layout}`, '--source-name', opts.repository, '--source-version', version, '-o', `cyclonedx-json=${join(out, 'sbom.cdx.json')}`], {
      log,
      env: { ...process.env, SYFT_CHECK_FOR_APP_UPDATE: 'false' },
    });

    // 4. The install files, the image reference, the notes and the checksums.
    const image = `${tagged}@${remote}`;
    const files = writeReleaseFiles(out, {
      root, kustomize: kustomize.binary, version, repository: opts.repository, digest: remote, lbImages, plugin,
      ...(upgradeImpact ? { upgradeImpact } : {}),
      ...(measured ? { upgradeMeasured: measured } : {}),
      ...(adapter ? { adapter } : {}), ...(monitoring ? { monitoring } : {}),
    });
    log(`released ${image}; ${out}: ${files.join(', ')}`);
    if (!monitoring) log(`no ${MONITORING_FILE}: made without --kube-state-metrics <ref@sha256:...> (the notes say so)`);
    else if (monitoring.runbookBase === undefined) log(`${MONITORING_FILE}: the alerts name their runbooks by path (${RUNBOOK_DOC}#...): made without --runbook-base (the notes say so)`);
    return { version, image, digest: remote, lbImages, dir: out, files };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

runAsScript(import.meta.url, () => release(parseReleaseOptions(process.argv.slice(2).filter((a) => a !== '--print')), log), log);
