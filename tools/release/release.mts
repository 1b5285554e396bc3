#!/usr/bin/env node
// `npm run release -- <registry>/<repository>`: one release an operator can
// pin. Builds the controller image from the repository's Dockerfile with
// buildah (tools/image), tags it with package.json's version, pushes it,
// reads the digest back from the registry, and writes into dist/release/:
//
//   install.yaml, install-beside-meridio-2.yaml   the kustomize install with
//       the image by digest and the version annotation on every object
//       (install-files.mts)
//   sbom.cdx.json   CycloneDX SBOM of the image as pulled back by its digest,
//       written by syft (tools/syft): the base's Debian packages, Node.js, and
//       the npm packages bundled into the function (/app/node_modules)
//   image.txt       <registry>/<repository>:<version>@sha256:<digest>
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
//   --tls-verify=false   a registry without TLS (a loopback test registry)
//   --out <dir>          instead of dist/release
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { logger, runAsScript, type Log } from '../go-build.mts';
import { buildForRegistry } from '../image/build-for-registry.mts';
import { imageExists, runCommand, storageArgs } from '../image/buildah.mts';
import { ensureHostTools, IMAGE_TOOLS, RELEASE_TOOLS } from '../image/host-tools.mts';
import { ensureGoTool } from '../go-tools.mts';
import { repoRoot } from '../harness/repo-root.ts';
import { INSTALL_VARIANTS, pinnedImage, renderInstall, type PinnedImage } from './install-files.mts';

const log = logger('release');

/** The label the Dockerfile sets from its VERSION argument. */
export const VERSION_LABEL = 'org.opencontainers.image.version';

const OptionsSchema = z.object({
  repository: z.string().regex(/^[a-z0-9.-]+(?::\d+)?\/[a-z0-9._/-]+$/, 'a repository without tag or digest, such as registry.example.com/team/meridio-2-gateway-controller'),
  localBase: z.boolean(),
  nodeImage: z.string().min(1).optional(),
  image: z.string().min(1).optional(),
  receiveAdapter: z.string().min(1).optional(),
  tlsVerify: z.boolean(),
  out: z.string().min(1),
});
export type ReleaseOptions = z.infer<typeof OptionsSchema>;

export function parseReleaseOptions(argv: string[]): ReleaseOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'local-base': { type: 'boolean', default: false },
      'node-image': { type: 'string' },
      image: { type: 'string' },
      'receive-adapter': { type: 'string' },
      'tls-verify': { type: 'string', default: 'true' },
      out: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new Error('usage: npm run release -- <registry>/<repository> [--local-base | --node-image <ref> | --image <ref>] [--receive-adapter <ref@sha256:...>] [--tls-verify=false] [--out <dir>]');
  const tls = values['tls-verify'];
  if (tls !== 'true' && tls !== 'false') throw new Error(`--tls-verify: true or false, not ${tls}`);
  const parsed = OptionsSchema.safeParse({
    repository: positionals[0],
    localBase: values['local-base'],
    nodeImage: values['node-image'],
    image: values.image,
    receiveAdapter: values['receive-adapter'],
    tlsVerify: tls === 'true',
    out: values.out ?? join(repoRoot(), 'dist', 'release'),
  });
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${i.path.join('.') || 'argument'}: ${i.message}`).join('; '));
  const chosen = [parsed.data.localBase, parsed.data.nodeImage !== undefined, parsed.data.image !== undefined].filter(Boolean).length;
  if (chosen > 1) throw new Error('--local-base, --node-image and --image each choose the image: give one');
  if (parsed.data.receiveAdapter) pinnedImage(parsed.data.receiveAdapter);
  return parsed.data;
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
  dir: string;
  files: string[];
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
  const [kustomize, syft] = [await ensureGoTool('kustomize'), await ensureGoTool('syft')];
  const adapter: PinnedImage | undefined = opts.receiveAdapter ? pinnedImage(opts.receiveAdapter) : undefined;

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

    // 4. The install files, the image reference and the checksums.
    for (const variant of INSTALL_VARIANTS) {
      writeFileSync(join(out, variant.file), renderInstall(kustomize.binary, join(root, 'infra'), variant, { repository: opts.repository, digest: remote }, version, adapter));
    }
    const image = `${tagged}@${remote}`;
    writeFileSync(join(out, 'image.txt'), `${image}\n`);
    const files = readdirSync(out).sort();
    writeFileSync(join(out, 'SHA256SUMS'), sha256sums(files.map((name) => ({ name, content: readFileSync(join(out, name)) }))));
    log(`released ${image}; ${out}: ${[...files, 'SHA256SUMS'].join(', ')}`);
    return { version, image, digest: remote, dir: out, files: [...files, 'SHA256SUMS'] };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

runAsScript(import.meta.url, () => release(parseReleaseOptions(process.argv.slice(2).filter((a) => a !== '--print')), log), log);
