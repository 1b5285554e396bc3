import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { modelTable } from './model-table.mts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * One minified CommonJS script for Node 24 from `entry` and all it imports
 * (relative to the repository root): what a startup snapshot and a single
 * executable (tools/plugin) both start from, since each takes one script and
 * CommonJS only. The LB template decoder's models are cut to the table it
 * reads (model-table.mts) in both. Returns the files the script holds.
 */
export async function bundleScript(entry: string, outfile: string, plugins: Plugin[] = []): Promise<string[]> {
  mkdirSync(dirname(join(root, outfile)), { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    outfile,
    logLevel: 'warning',
    plugins: [modelTable(), ...plugins],
    metafile: true,
  });
  return Object.keys(result.metafile.inputs);
}
