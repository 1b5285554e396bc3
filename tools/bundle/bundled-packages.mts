// The npm packages whose code the bundle holds, laid out for the image as an
// installed node_modules would be: /app/node_modules/<name>/package.json and
// the package's licence files, plus npm's own record of an installed tree,
// node_modules/.package-lock.json (the entries of package-lock.json for
// exactly these packages: version, resolved, integrity, licence). Nothing
// loads them (the startup snapshot holds the code); they are there so that
// the image carries the licence texts of the code it ships, and so that an
// SBOM tool reading the image (syft, `npm run release`) finds every bundled
// package with its version, as it would in an image that installs node_modules.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

/** Where the bundle build writes the tree (the Dockerfile copies it to /app/node_modules). */
export const BUNDLED_PACKAGES_DIR = join('dist', 'image', 'node_modules');

/**
 * The package directories (as npm names them in package-lock.json:
 * `node_modules/a`, `node_modules/@s/b`, `node_modules/a/node_modules/c`) of
 * the bundle's input files.
 */
export function bundledPackagePaths(inputs: readonly string[]): string[] {
  const dirs = new Set<string>();
  for (const input of inputs) {
    // The innermost package: everything up to the last node_modules/<name> (or <@scope>/<name>).
    const m = input.match(/^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//);
    if (m?.[1] && m[1].startsWith('node_modules/')) dirs.add(m[1]);
  }
  return [...dirs].sort();
}

const LICENCE_FILE = /^(licen[cs]e|copying|notice)/i;

const LockSchema = z.looseObject({
  name: z.string(),
  version: z.string(),
  lockfileVersion: z.number(),
  packages: z.record(z.string(), z.looseObject({ version: z.string().optional() })),
});

/**
 * Writes the tree under `root`/BUNDLED_PACKAGES_DIR from the bundle's inputs
 * (esbuild's metafile) and the repository's package-lock.json. Returns the
 * package directories written.
 */
export function writeBundledPackages(root: string, inputs: readonly string[]): string[] {
  const out = join(root, BUNDLED_PACKAGES_DIR);
  rmSync(out, { recursive: true, force: true });
  const lock = LockSchema.parse(JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')));
  const paths = bundledPackagePaths(inputs);
  const packages: Record<string, unknown> = {};
  for (const path of paths) {
    const entry = lock.packages[path];
    if (!entry) throw new Error(`the bundle holds ${path}, which package-lock.json does not list: run npm ci`);
    packages[path] = entry;
    const dest = join(out, path.replace(/^node_modules\//, ''));
    mkdirSync(dest, { recursive: true });
    copyFileSync(join(root, path, 'package.json'), join(dest, 'package.json'));
    for (const file of readdirSync(join(root, path))) {
      if (LICENCE_FILE.test(file) && existsSync(join(root, path, file))) copyFileSync(join(root, path, file), join(dest, file));
    }
  }
  // npm's hidden lockfile: what npm writes into node_modules to record the installed tree.
  writeFileSync(join(out, '.package-lock.json'), `${JSON.stringify({ name: lock.name, version: lock.version, lockfileVersion: lock.lockfileVersion, requires: true, packages }, null, 2)}\n`);
  return paths;
}
