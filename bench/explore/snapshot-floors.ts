import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';
import { deferModules } from '../../tools/bundle/defer-modules.mjs';
import { snapshotConfig } from '../../tools/bundle/build.mjs';
import { SHIPPED_NODE_OPTIONS, SHIPPED_SCRIPT } from '../../tools/bundle/shipped.mjs';
import { repoPath, repoRoot } from '../../tools/harness/repo-root.js';
import { summarize, type Summary } from '../lib/stats.js';

// P1 under --explore, the floor of the startup snapshot: what deserializing each named
// dependency costs, measured the way the shipped snapshot is built (the same
// esbuild options and deferred modules, the same snapshot configuration and
// NODE_OPTIONS). Each
// snapshot's main function exits at once, so spawn → exit is Node's own start
// plus deserializing that heap, and nothing else. The last row is the
// function's own bundle (dist/function.cjs) with its main function replaced
// by an exit: the start before any of the function's code runs.

export interface SnapshotFloor {
  /** "(empty)", a package name, or "the function". */
  contents: string;
  blobBytes: number;
  /** spawn → exit (ms). */
  exitMs: Summary;
}

/** The function's runtime dependencies. */
export const DEPENDENCIES = ['@kubernetes/client-node', 'zod', 'cloudevents', 'pino'] as const;
const EXIT_AT_MAIN = "require('node:v8').startupSnapshot.setDeserializeMainFunction(() => process.exit(0));\n";

function env(): Record<string, string> {
  return { PATH: process.env.PATH ?? '', NODE_OPTIONS: SHIPPED_NODE_OPTIONS };
}

export async function measureSnapshotFloors(repeats: number): Promise<SnapshotFloor[]> {
  const dir = repoPath('dist', 'bench', 'snapshot-floors');
  mkdirSync(dir, { recursive: true });
  const scripts: { contents: string; script: string }[] = [];
  const bundle = async (name: string, source: string): Promise<string> => {
    const entry = `${dir}/${name}.ts`;
    const out = `${dir}/${name}.cjs`;
    writeFileSync(entry, source);
    await build({ absWorkingDir: repoRoot(), entryPoints: [entry], bundle: true, minify: true, platform: 'node', format: 'cjs', target: 'node24', outfile: out, logLevel: 'error', plugins: [deferModules(repoRoot())] });
    return out;
  };
  scripts.push({ contents: '(empty)', script: await bundle('empty', EXIT_AT_MAIN) });
  for (const [i, pkg] of DEPENDENCIES.entries()) {
    // Keeps the whole namespace, as an application that uses the package might.
    scripts.push({ contents: pkg, script: await bundle(`package-${i}`, `import * as m from '${pkg}';\n(globalThis as Record<string, unknown>).kept = m;\n${EXIT_AT_MAIN}`) });
  }
  // The shipped bundle, its own main function made a no-op by setting an exit first.
  const fn = `${dir}/function.cjs`;
  writeFileSync(fn, `const s = require('node:v8').startupSnapshot; s.setDeserializeMainFunction(() => process.exit(0)); s.setDeserializeMainFunction = () => {};\n${readFileSync(repoPath(SHIPPED_SCRIPT), 'utf8')}`);
  scripts.push({ contents: 'the function (dist/function.cjs), exiting at its main function', script: fn });

  const blobs = scripts.map((s) => {
    const blob = s.script.replace(/\.cjs$/, '.blob');
    const config = s.script.replace(/\.cjs$/, '.json');
    writeFileSync(config, JSON.stringify(snapshotConfig(s.script)));
    execFileSync(process.execPath, ['--snapshot-blob', blob, '--build-snapshot-config', config], { cwd: repoRoot(), env: env(), stdio: 'ignore' });
    return { ...s, blob };
  });
  const times = new Map<string, number[]>();
  for (let r = 0; r < repeats; r++) {
    for (const b of blobs) {
      const t = performance.now();
      const p = spawnSync(process.execPath, ['--snapshot-blob', b.blob], { cwd: repoRoot(), env: env(), stdio: 'ignore' });
      if (p.status !== 0) throw new Error(`snapshot of ${b.contents} exited ${p.status ?? p.signal}`);
      times.set(b.contents, [...(times.get(b.contents) ?? []), performance.now() - t]);
    }
  }
  return blobs.map((b) => ({ contents: b.contents, blobBytes: statSync(b.blob).size, exitMs: summarize(times.get(b.contents) ?? []) }));
}
