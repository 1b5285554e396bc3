#!/usr/bin/env node
// Builds what the image runs (`npm run build:bundle`):
// - dist/function.cjs: functions/snapshot-main.ts and everything it imports,
//   bundled into one CommonJS script (a startup snapshot is built from one
//   script, and CommonJS only), with only the API models the template
//   decoder reads (model-table.mts) and Node's HTTP modules deferred
//   (defer-modules.mts);
// - dist/function.blob: the V8 startup snapshot built from it, with the Node
//   that runs this script. A blob only starts with the exact Node binary that
//   built it (the image builds it in its build stage, on the same base image
//   as the runtime stage);
// - dist/image/node_modules: the package.json and licence files of the npm
//   packages the bundle holds, with npm's record of them (.package-lock.json),
//   which the image carries as /app/node_modules (bundled-packages.mts).
//
// The image, the bench's "shipped" variant and the process-level tests all
// start it the same way: SHIPPED_NODE_ARGS with NODE_OPTIONS=SHIPPED_NODE_OPTIONS
// (tools/bundle/shipped.mts).
//
// Usage: node tools/bundle/build.mts
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleScript } from './bundle-script.mts';
import { writeBundledPackages } from './bundled-packages.mts';
import { deferModules } from './defer-modules.mts';
import { SHIPPED_BLOB, SHIPPED_NODE_OPTIONS, SHIPPED_SCRIPT } from './shipped.mts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Node's --build-snapshot-config: the script to run, and no code cache (see below). */
export function snapshotConfig(builder: string = SHIPPED_SCRIPT, withoutCodeCache = true): { builder: string; withoutCodeCache: boolean } {
  return { builder, withoutCodeCache };
}

export async function buildShipped(): Promise<void> {
  const inputs = await bundleScript('functions/snapshot-main.ts', SHIPPED_SCRIPT, [deferModules(root)]);
  // Which packages the bundle holds: their package.json and licences go into the image.
  writeBundledPackages(root, inputs);
  rmSync(join(root, SHIPPED_BLOB), { force: true });
  // Without V8's code cache: functions compiled while building are not kept
  // compiled, so the blob is 8 instead of 14 MB. Measured (bench P1, P5, two
  // runs): ready within ~10 ms either way, the first event ~20 ms slower
  // (those functions compile then), idle memory ~6 MB lower (66 vs 72 MB,
  // against a 70 MB target).
  const config = join('dist', 'function.snapshot.json');
  writeFileSync(join(root, config), `${JSON.stringify(snapshotConfig(), null, 2)}\n`);
  // From the repository root: the default LB template is parsed from
  // infra/templates/ into the snapshot. Same V8 options as at run time.
  execFileSync(process.execPath, ['--snapshot-blob', SHIPPED_BLOB, '--build-snapshot-config', config], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: SHIPPED_NODE_OPTIONS },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildShipped();
}
