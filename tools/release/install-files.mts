// The release's install files: the kustomize install of infra/ (and its
// variants) with the controller image pinned by digest and the release's
// version as an annotation on every object, rendered by the pinned kustomize
// from a throwaway overlay, exactly as an operator's own overlay would.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { dump } from 'js-yaml';

/** The annotation every object of a release's install file carries. */
export const VERSION_ANNOTATION = 'meridio-2.nordix.org/version';
/** The name the kustomize install gives the controller image (infra/kustomization.yaml, images:). */
export const CONTROLLER_IMAGE_NAME = 'meridio-2-gateway-controller';
/** The name it gives the gateway-watch ContainerSource's image, Knative's ApiServerSource adapter. */
export const ADAPTER_IMAGE_NAME = 'knative-apiserver-receive-adapter';

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

/**
 * The overlay that pins the image and annotates the release (kustomization.yaml
 * text). `infraDir` is relative to the overlay's directory: kustomize refuses
 * absolute roots.
 */
export function releaseOverlay(infraDir: string, variant: InstallVariant, image: PinnedImage, version: string, adapter?: PinnedImage): string {
  return dump({
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [infraDir],
    ...(variant.components.length ? { components: variant.components.map((c) => join(infraDir, c)) } : {}),
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
export function renderInstall(kustomize: string, infraDir: string, variant: InstallVariant, image: PinnedImage, version: string, adapter?: PinnedImage): string {
  const dir = mkdtempSync(join(tmpdir(), 'meridio2-release-'));
  try {
    writeFileSync(join(dir, 'kustomization.yaml'), releaseOverlay(relative(dir, infraDir), variant, image, version, adapter));
    return execFileSync(kustomize, ['build', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
