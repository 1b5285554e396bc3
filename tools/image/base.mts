#!/usr/bin/env node
// The local base image for the Dockerfile's NODE_IMAGE, for machines that
// reach Debian's archive and the npm registry but no container registry. As
// close to the official node:24-slim as those sources allow:
// - a Debian bookworm root filesystem from Debian's packages (mmdebstrap,
//   minbase, merged /usr, slimmed as debian:bookworm-slim is: no manuals,
//   info pages, locales or documentation other than copyright files);
// - the official Node.js binary distribution the `node` npm package ships
//   (node-linux-<arch>, the version package-lock.json pins), under /usr/local;
// - npm and corepack at the versions that Node.js release bundles (read from
//   its CHANGELOG), and Yarn classic, from the npm registry;
// - the `node` user (uid and gid 1000) and an entrypoint that behaves as the
//   official image's.
// Built once per recipe and cached in the project's buildah store as
// localhost/meridio-2-node-base:<node>-bookworm-slim-<recipe hash>.
//
// Usage: node tools/image/base.mts [--print]   (--print: print the image
// reference as JSON on stdout)
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { cacheRoot, logger, runAsScript, withLock, type Log } from '../go-build.mts';
import { buildah, imageExists, runCommand, RUNTIME_ARGS } from './buildah.mts';
import { BASE_TOOLS, IMAGE_TOOLS, ensureHostTools } from './host-tools.mts';
import { repoRoot } from '../harness/repo-root.ts';

// The source directory (also when this module runs compiled, from dist/): the
// Containerfile and entrypoint live there, and the recipe hash reads this file's source.
const here = join(repoRoot(), 'tools', 'image');
const log = logger('image');

/** The Debian release of node:24-slim's default variant. */
export const DEBIAN_SUITE = 'bookworm';
/** The Yarn classic release the official Node.js images install. */
export const YARN_VERSION = '1.22.22';
export const BASE_REPOSITORY = 'localhost/meridio-2-node-base';

const MIRRORS = [
  `deb http://deb.debian.org/debian ${DEBIAN_SUITE} main`,
  `deb http://deb.debian.org/debian ${DEBIAN_SUITE}-updates main`,
  `deb http://deb.debian.org/debian-security ${DEBIAN_SUITE}-security main`,
];

// debian:bookworm-slim's dpkg excludes (they stay in the image, in
// /etc/dpkg/dpkg.cfg.d/, so later installs stay slim too).
const SLIM_PATHS = [
  'path-exclude=/usr/share/man/*',
  'path-exclude=/usr/share/info/*',
  'path-exclude=/usr/share/groff/*',
  'path-exclude=/usr/share/linda/*',
  'path-exclude=/usr/share/lintian/overrides/*',
  'path-exclude=/usr/share/locale/*',
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
];

/** mmdebstrap's arguments before the output file and mirrors. */
function mmdebstrapArgs(): string[] {
  return [
    '--variant=minbase',
    '--mode=root',
    '--format=tar',
    // Device nodes belong to the runtime, not the image.
    '--skip=output/dev',
    // Merged /usr by symlinks, without the usrmerge package (which would pull
    // in perl), as debian:bookworm-slim is.
    '--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr',
    ...SLIM_PATHS.map((p) => `--dpkgopt=${p}`),
  ];
}

/** Node.js architecture → the OpenSSL configuration name of its headers. */
const OPENSSL_ARCH: Record<string, string> = { x64: 'linux-x86_64', arm64: 'linux-aarch64', ppc64: 'linux-ppc64le', s390x: 'linux64-s390x' };

const PackageJsonSchema = z.looseObject({ version: z.string() });
const LockSchema = z.looseObject({ packages: z.record(z.string(), z.looseObject({ version: z.string().optional() })) });

/** The official Node.js distribution that the `node` devDependency installed. */
export function nodeDistribution(root: string = repoRoot()): { dir: string; version: string } {
  const name = `node-${process.platform}-${process.arch}`;
  const candidates = [join(root, 'node_modules', 'node', 'node_modules', name), join(root, 'node_modules', name)];
  const dir = candidates.find((d) => existsSync(join(d, 'bin', 'node')));
  if (!dir) throw new Error(`no ${name} package under node_modules: run npm ci first (the \`node\` devDependency installs it)`);
  const version = PackageJsonSchema.parse(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))).version;
  const locked = LockSchema.parse(JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))).packages['node_modules/node']?.version;
  if (locked !== version) throw new Error(`node_modules has Node.js ${version}, package-lock.json pins ${locked ?? 'none'}: run npm ci`);
  return { dir, version };
}

/**
 * The npm or corepack version a Node.js release bundles: the newest
 * "upgrade npm to" / "update corepack to" entry of its release-line CHANGELOG.
 */
export function bundledVersion(changelog: string, pkg: 'npm' | 'corepack'): string {
  const m = changelog.match(new RegExp(`\\*\\*deps\\*\\*: (?:upgrade|update) ${pkg} to (\\d+\\.\\d+\\.\\d+)`));
  if (!m?.[1]) throw new Error(`the Node.js CHANGELOG names no ${pkg} version`);
  return m[1];
}

export interface BaseRecipe {
  node: string;
  npm: string;
  corepack: string;
  yarn: string;
  nodeDir: string;
  /** The image reference the recipe builds. */
  ref: string;
}

export function baseRecipe(): BaseRecipe {
  const { dir, version } = nodeDistribution();
  const changelog = readFileSync(join(dir, 'CHANGELOG.md'), 'utf8');
  const npm = bundledVersion(changelog, 'npm');
  const corepack = bundledVersion(changelog, 'corepack');
  // Any change to how the image is assembled (this file included) gives it a new tag.
  const hash = createHash('sha256')
    .update(JSON.stringify({ version, npm, corepack, yarn: YARN_VERSION, suite: DEBIAN_SUITE, mm: mmdebstrapArgs(), MIRRORS, openssl: OPENSSL_ARCH[process.arch] }))
    .update(readFileSync(join(here, 'base.mts')))
    .update(readFileSync(join(here, 'node-base.Containerfile')))
    .update(readFileSync(join(here, 'docker-entrypoint.sh')))
    .digest('hex')
    .slice(0, 12);
  return { node: version, npm, corepack, yarn: YARN_VERSION, nodeDir: dir, ref: `${BASE_REPOSITORY}:${version}-${DEBIAN_SUITE}-slim-${hash}` };
}

/** The Debian root filesystem tarball, built once per recipe. */
async function rootfsTarball(file: string, log: Log): Promise<void> {
  if (existsSync(file)) return;
  log(`assembling a Debian ${DEBIAN_SUITE} slim root filesystem with mmdebstrap (about 2 minutes)`);
  const tmp = `${file}.tmp-${process.pid}`;
  mkdirSync(dirname(file), { recursive: true });
  try {
    await runCommand('mmdebstrap', [...mmdebstrapArgs(), DEBIAN_SUITE, tmp, ...MIRRORS], { log });
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** npm's tarball of `name@version`, extracted into `dest`. */
async function npmPackage(name: string, version: string, dest: string, scratch: string, log: Log): Promise<void> {
  await runCommand('npm', ['pack', `${name}@${version}`, '--pack-destination', scratch, '--silent'], { log });
  mkdirSync(dest, { recursive: true });
  await runCommand('tar', ['-xzf', join(scratch, `${name}-${version}.tgz`), '-C', dest, '--strip-components=1', '--no-same-owner'], { log });
}

/** The build context of node-base.Containerfile. */
async function stageContext(recipe: BaseRecipe, ctx: string, rootfs: string, log: Log): Promise<void> {
  rmSync(ctx, { recursive: true, force: true });
  mkdirSync(ctx, { recursive: true });
  const scratch = join(ctx, '.packs');
  mkdirSync(scratch);
  // Hard link-free copies: the tarball stays in the cache for the next recipe change of the other parts.
  copyFileSync(rootfs, join(ctx, 'rootfs.tar'));
  const local = join(ctx, 'usr-local');
  // The official distribution's layout: bin/node, include/, share/ and the
  // top-level CHANGELOG.md, LICENSE and README.md, all under /usr/local.
  await runCommand('cp', ['-a', `${recipe.nodeDir}/.`, local], { log });
  rmSync(join(local, 'package.json'));
  // As the official image does: OpenSSL's headers for other platforms go (about 60 MB).
  const keep = OPENSSL_ARCH[process.arch];
  if (!keep) throw new Error(`no OpenSSL header configuration known for ${process.arch}`);
  const archs = join(local, 'include', 'node', 'openssl', 'archs');
  for (const arch of readdirSync(archs)) if (arch !== keep) rmSync(join(archs, arch), { recursive: true });
  await npmPackage('npm', recipe.npm, join(local, 'lib', 'node_modules', 'npm'), scratch, log);
  await npmPackage('corepack', recipe.corepack, join(local, 'lib', 'node_modules', 'corepack'), scratch, log);
  const bin = join(local, 'bin');
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(bin, 'npm'));
  symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(bin, 'npx'));
  symlinkSync('../lib/node_modules/corepack/dist/corepack.js', join(bin, 'corepack'));
  symlinkSync('/usr/local/bin/node', join(bin, 'nodejs'));
  const yarnDir = `yarn-v${recipe.yarn}`;
  await npmPackage('yarn', recipe.yarn, join(ctx, 'opt', yarnDir), scratch, log);
  symlinkSync(`/opt/${yarnDir}/bin/yarn`, join(bin, 'yarn'));
  symlinkSync(`/opt/${yarnDir}/bin/yarnpkg`, join(bin, 'yarnpkg'));
  rmSync(scratch, { recursive: true, force: true });
  copyFileSync(join(here, 'docker-entrypoint.sh'), join(ctx, 'docker-entrypoint.sh'));
  chmodSync(join(ctx, 'docker-entrypoint.sh'), 0o755);
}

/**
 * Makes sure the local base image is in the project's buildah store and
 * returns its reference. Cold: about 3 minutes (mmdebstrap, three npm
 * packages, one buildah build); afterwards one `buildah inspect`.
 */
export async function ensureNodeBase(log: Log = logger('image')): Promise<BaseRecipe> {
  const recipe = baseRecipe();
  await ensureHostTools(IMAGE_TOOLS, log);
  if (await imageExists(recipe.ref, log)) return recipe;
  await withLock('.node-base-build.lock', log, async () => {
    if (await imageExists(recipe.ref, log)) return;
    await ensureHostTools(BASE_TOOLS, log);
    const started = Date.now();
    const work = join(cacheRoot(), 'image');
    const rootfs = join(work, 'rootfs', `${DEBIAN_SUITE}-slim-${createHash('sha256').update(JSON.stringify([mmdebstrapArgs(), MIRRORS])).digest('hex').slice(0, 12)}.tar`);
    await rootfsTarball(rootfs, log);
    const ctx = join(work, `base-context-${process.pid}`);
    try {
      await stageContext(recipe, ctx, rootfs, log);
      log(`building ${recipe.ref} (Node.js ${recipe.node}, npm ${recipe.npm}, corepack ${recipe.corepack}, Yarn ${recipe.yarn})`);
      await buildah(['bud', ...RUNTIME_ARGS, '--network', 'none', '--pull=false', '--layers',
        '--build-arg', `NODE_VERSION=${recipe.node}`, '--build-arg', `YARN_VERSION=${recipe.yarn}`,
        '-f', join(here, 'node-base.Containerfile'), '-t', recipe.ref, ctx], { log });
    } finally {
      rmSync(ctx, { recursive: true, force: true });
    }
    log(`built ${recipe.ref} in ${Math.round((Date.now() - started) / 1000)}s`);
  });
  return recipe;
}

runAsScript(import.meta.url, () => ensureNodeBase(log).then((r) => r.ref), log);
